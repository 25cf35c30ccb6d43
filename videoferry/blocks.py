"""videoferry's Prefect blocks; `prefect block register -m videoferry.blocks` puts them in the UI."""

from tasks.blocks import VideoferryCredentials, VimeoCredentials, WistiaCredentials

__all__ = ["VideoferryCredentials", "VimeoCredentials", "WistiaCredentials"]
