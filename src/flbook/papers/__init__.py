"""The papers as they report themselves: settings, numbers and quotes, as data modules that import
nothing of the project (the ledger and the experiments read them)."""
