"""The service desk (issue 16): built in parts; see speech.py for the user simulator's contract."""
