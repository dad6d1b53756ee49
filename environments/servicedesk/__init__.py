"""The service desk (issue 16): built in parts; see speech.py for the user simulator's contract."""

from environments.servicedesk import patterns as patterns  # registers the 13 behaviour patterns in speech.PATTERNS
