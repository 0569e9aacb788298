"""The names of result files that a command writes and the ledger reads, one module per command:
the ledger finds a file here without importing the command (which imports torch and the attacks)."""
