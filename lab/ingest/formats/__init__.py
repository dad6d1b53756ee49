"""One module per foreign format. Each has `NAME`, `matches(value)` for one record-shaped object, and
`to_record(raw, origin, ctx, context)` returning a canonical record (not yet validated)."""
