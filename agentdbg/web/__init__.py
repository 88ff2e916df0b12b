"""``agentdbg serve``'s web server: the debugger in a browser, behind a token.

``guard`` decides who may reach it (the token, the Host and Origin headers), with no web
framework; ``server`` is textual-serve's server with those checks in front of every route
and a page that needs no internet (``page.html``, ``static/``).
"""
