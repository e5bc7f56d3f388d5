"""The daemon's read-only status pages (`clkt.web.pages`), their guards (`clkt.web.security`) and file
serving (`clkt.web.files`)."""

from clkt.web.pages import PageContext, add_pages, pages_app
from clkt.web.security import HostGuard, security_middlewares

__all__ = ["HostGuard", "PageContext", "add_pages", "pages_app", "security_middlewares"]
