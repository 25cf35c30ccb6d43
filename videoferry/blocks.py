"""videoferry's Prefect blocks; `prefect block register -m videoferry.blocks` puts them in the UI."""

from videoferry.connectors.blocks import VideoferryCredentials, VimeoCredentials, WistiaCredentials

__all__ = ["VideoferryCredentials", "VimeoCredentials", "WistiaCredentials"]
