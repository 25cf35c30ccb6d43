"""Clients of the platforms videos are moved from (Vimeo, Wistia, Mux, Cloudflare, api.video, Bunny)."""
