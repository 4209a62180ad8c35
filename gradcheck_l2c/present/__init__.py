"""Present: turn findings into what people read — the text report, JSON, the live status line, drawn graphs."""
