"""Stand-ins for the platforms videos are moved from (Vimeo, Wistia): loopback servers with a control API."""
