"""links: the old -> new map, and rewrite-embeds (the platforms' URL forms, the map's formats, the files)."""
