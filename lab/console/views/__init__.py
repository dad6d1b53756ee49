"""Console pages, one module per page (STYLE.md: split views by page)."""
