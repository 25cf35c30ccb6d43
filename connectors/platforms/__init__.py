"""Clients of the platforms videos are moved from (Vimeo, Wistia): listing, checks and download links."""
