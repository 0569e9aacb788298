"""How the book shows its results: the tables and figures a chapter or a reproduction page draws
from the library's outputs and the committed result files, one module per paper, so that a
chapter's code cell says what it computes and not how the table is laid out."""
