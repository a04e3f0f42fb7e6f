"""A small repository shaped like Flask, for the README's walk-through: the paths, names and
tags its examples use (`src/flask/app.py`, `Flask.wsgi_app`, `helpers.url_for`, the session
interfaces, tags 2.3.0 and 3.0.0), written here, under the BSD-3-Clause license."""

from __future__ import annotations

from pathlib import Path

from tests.support.gitrepos import BSD_3_CLAUSE, commit, init_repo

_HOOK_NAMES = [
    ("before_request", "before each request"),
    ("after_request", "after each request, with the response"),
    ("teardown_request", "when the request context is popped, even after an error"),
    ("teardown_appcontext", "when the application context is popped"),
    ("context_processor", "to add values to the template context"),
    ("url_value_preprocessor", "on the URL values before the view"),
    ("url_defaults", "to fill in URL values when building URLs"),
    ("shell_context_processor", "to add values to the shell context"),
    ("template_filter", "as a template filter"),
    ("template_test", "as a template test"),
    ("template_global", "as a template global"),
    ("errorhandler", "when an error of a code or class is raised"),
]
_HOOKS = "\n".join(
    f'''    def {name}(self, f):
        """Register a function to run {when}."""
        self.{name}_funcs.setdefault(None, []).append(f)
        return f
'''
    for name, when in _HOOK_NAMES
)
_HOOK_DICTS = "".join(f"        self.{name}_funcs = {{}}\n" for name, _ in _HOOK_NAMES)

APP = f'''"""The Flask application object: configuration, URL rules, hooks, the WSGI entry point."""

from __future__ import annotations

from .blueprints import Blueprint
from .ctx import AppContext, RequestContext
from .helpers import url_for
from .sessions import SecureCookieSessionInterface


class Flask:
    """The central object: a WSGI application that dispatches requests to view functions."""

    session_interface = SecureCookieSessionInterface()

    def __init__(self, import_name, static_folder="static"):
        self.import_name = import_name
        self.static_folder = static_folder
        self.config = {{"SECRET_KEY": None, "SESSION_COOKIE_NAME": "session"}}
        self.view_functions = {{}}
        self.url_map = []
        self.blueprints = {{}}
{_HOOK_DICTS}
    def add_url_rule(self, rule, endpoint=None, view_func=None, methods=None):
        """Connect a URL rule to an endpoint and its view function."""
        endpoint = endpoint or view_func.__name__
        self.url_map.append((rule, endpoint, tuple(methods or ("GET",))))
        if view_func is not None:
            self.view_functions[endpoint] = view_func

    def route(self, rule, **options):
        """Decorate a view function to register it for the given URL rule."""

        def decorator(f):
            self.add_url_rule(rule, options.pop("endpoint", None), f, **options)
            return f

        return decorator

    def register_blueprint(self, blueprint: Blueprint, **options):
        """Register a blueprint on the application: its routes, hooks and error handlers
        are recorded on the app under the blueprint's name."""
        name = options.get("name", blueprint.name)
        if name in self.blueprints:
            raise ValueError(f"The name {{name!r}} is already registered for a blueprint.")
        self.blueprints[name] = blueprint
        blueprint.register(self, options)

    def iter_blueprints(self):
        """Iterate over all blueprints in the order they were registered."""
        return iter(self.blueprints.values())

{_HOOKS}
    def app_context(self):
        """Create an application context for this application."""
        return AppContext(self)

    def request_context(self, environ):
        """Create a request context for the WSGI environment."""
        return RequestContext(self, environ)

    def preprocess_request(self):
        """Call the before_request functions; a value one returns ends the request."""
        for funcs in self.before_request_funcs.values():
            for func in funcs:
                rv = func()
                if rv is not None:
                    return rv
        return None

    def dispatch_request(self, ctx):
        """Match the request URL and call the view function registered for it."""
        rule, endpoint, _ = ctx.match(self.url_map)
        return self.view_functions[endpoint](**ctx.view_args)

    def full_dispatch_request(self, ctx):
        """Dispatch the request with pre and post processing and error handling."""
        rv = self.preprocess_request()
        if rv is None:
            rv = self.dispatch_request(ctx)
        return self.finalize_request(ctx, rv)

    def finalize_request(self, ctx, rv):
        """Turn a view's return value into a response and run after_request functions."""
        response = self.make_response(rv)
        for funcs in self.after_request_funcs.values():
            for func in funcs:
                response = func(response)
        self.session_interface.save_session(self, ctx.session, response)
        return response

    def make_response(self, rv):
        """Convert a view's return value into a response object."""
        if isinstance(rv, tuple):
            body, status = rv
            return {{"body": body, "status": status}}
        return {{"body": rv, "status": 200}}

    def handle_exception(self, ctx, error):
        """Handle an exception the view did not handle: a 500 response."""
        handler = self.errorhandler_funcs.get(type(error))
        if handler is not None:
            return handler(error)
        return self.make_response(("Internal Server Error", 500))

    def do_teardown_request(self, ctx, exc=None):
        """Call every teardown_request function, after the request, even if it failed."""
        for funcs in reversed(list(self.teardown_request_funcs.values())):
            for func in reversed(funcs):
                func(exc)

    def do_teardown_appcontext(self, exc=None):
        """Call every teardown_appcontext function when the application context ends."""
        for funcs in self.teardown_appcontext_funcs.values():
            for func in reversed(funcs):
                func(exc)

    def wsgi_app(self, environ, start_response):
        """The WSGI application: push a request context, dispatch, respond, tear down."""
        ctx = self.request_context(environ)
        error = None
        try:
            ctx.push()
            try:
                response = self.full_dispatch_request(ctx)
            except Exception as e:
                error = e
                response = self.handle_exception(ctx, e)
            start_response(str(response["status"]), [])
            return [response["body"]]
        finally:
            self.do_teardown_request(ctx, error)
            ctx.pop(error)

    def url_for(self, endpoint, **values):
        """Build a URL to the given endpoint, as `helpers.url_for` does."""
        return url_for(endpoint, **values)

    def __call__(self, environ, start_response):
        """The WSGI server calls the Flask application object as the WSGI application."""
        return self.wsgi_app(environ, start_response)
'''

BLUEPRINTS = '''"""Blueprints: a set of routes and hooks registered on an application later."""


class Blueprint:
    """Records operations to run when it is registered on an application."""

    def __init__(self, name, import_name, url_prefix=None):
        self.name = name
        self.import_name = import_name
        self.url_prefix = url_prefix
        self.deferred_functions = []

    def record(self, func):
        """Record a function to call when the blueprint is registered on the app."""
        self.deferred_functions.append(func)

    def route(self, rule, **options):
        """Like Flask.route, for a view registered with the blueprint's name and prefix."""

        def decorator(f):
            self.record(lambda app: app.add_url_rule((self.url_prefix or "") + rule, None, f))
            return f

        return decorator

    def register(self, app, options):
        """Called by Flask.register_blueprint: register the recorded routes on the app."""
        for deferred in self.deferred_functions:
            deferred(app)
'''

CTX = '''"""The application and request contexts, and their teardown."""


class AppContext:
    """The application context: pushed with each request, or on its own."""

    def __init__(self, app):
        self.app = app

    def push(self):
        """Bind the application context."""
        return self

    def pop(self, exc=None):
        """Pop the application context, calling the teardown_appcontext functions."""
        self.app.do_teardown_appcontext(exc)


class RequestContext:
    """The request context: the request, its session, and the URL it matched."""

    def __init__(self, app, environ):
        self.app = app
        self.environ = environ
        self.session = None
        self.view_args = {}
        self.app_ctx = AppContext(app)

    def match(self, url_map):
        """The URL rule matching the request's path."""
        path = self.environ.get("PATH_INFO", "/")
        for rule in url_map:
            if rule[0] == path:
                return rule
        raise LookupError(path)

    def push(self):
        """Push the app context, then open the session."""
        self.app_ctx.push()
        self.session = self.app.session_interface.open_session(self.app, self.environ)

    def pop(self, exc=None):
        """Pop the request context and its app context; teardown callbacks run here."""
        self.app_ctx.pop(exc)
'''

HELPERS = '''"""Helpers for views: building URLs and flashing messages."""


def url_for(endpoint, *, _external=False, _anchor=None, **values):
    """Generate a URL to the given endpoint with the given values."""
    query = "&".join(f"{k}={v}" for k, v in sorted(values.items()))
    url = "/" + endpoint.replace(".", "/") + ("?" + query if query else "")
    if _anchor:
        url += "#" + _anchor
    return ("http://localhost" + url) if _external else url


def get_flashed_messages(with_categories=False):
    """Pull all flashed messages from the session and return them."""
    return []
'''

SESSIONS = '''"""Sessions: a signed cookie holds the session's data."""

import hashlib


class SessionMixin:
    """Expands a basic dictionary with session attributes."""

    permanent = False
    modified = True


class SecureCookieSession(dict, SessionMixin):
    """The session stored in a signed cookie."""


class NullSession(SecureCookieSession):
    """The session used when no secret key is set: reading works, writing fails."""

    def __setitem__(self, key, value):
        raise RuntimeError("The session is unavailable because no secret key was set.")


class SessionInterface:
    """The interface a session implementation provides."""

    null_session_class = NullSession

    def make_null_session(self, app):
        """A null session, used when the real one cannot be loaded."""
        return self.null_session_class()


class SecureCookieSessionInterface(SessionInterface):
    """Stores the session in a cookie signed with the application's secret key."""

    salt = "cookie-session"
    digest_method = staticmethod(hashlib.sha1)

    def get_signing_serializer(self, app):
        """The serializer that signs the session cookie with the app's secret key."""
        if not app.config["SECRET_KEY"]:
            return None
        return (app.config["SECRET_KEY"], self.salt, self.digest_method)

    def open_session(self, app, environ):
        """Load the session from the signed cookie, or a new one."""
        if self.get_signing_serializer(app) is None:
            return self.make_null_session(app)
        return SecureCookieSession()

    def save_session(self, app, session, response):
        """Sign the session and set it as the session cookie on the response."""
        if self.get_signing_serializer(app) is None or session is None:
            return
        response["cookie"] = (app.config["SESSION_COOKIE_NAME"], dict(session))
'''


def make_flasklike(path: Path) -> str:
    """A repository at `path` with tags 2.3.0 and 3.0.0 (where `url_for` took `_anchor`) and
    a later fix on `main`; returns the head."""
    repo = init_repo(path)
    old_helpers = HELPERS.replace(", _anchor=None", "").replace(
        '    if _anchor:\n        url += "#" + _anchor\n', ""
    )
    first = commit(
        repo,
        {
            "LICENSE.txt": BSD_3_CLAUSE,
            "README.md": "# Flask-like\n\nA small WSGI web framework for the README's examples.\n",
            "src/flask/__init__.py": "from .app import Flask\nfrom .helpers import url_for\n",
            "src/flask/app.py": APP,
            "src/flask/blueprints.py": BLUEPRINTS,
            "src/flask/ctx.py": CTX,
            "src/flask/helpers.py": old_helpers.replace(
                "def get_flashed_messages(with_categories=False):\n"
                '    """Pull all flashed messages from the session and return them."""\n'
                "    return []\n",
                "",
            ),
            "src/flask/sessions.py": SESSIONS,
        },
        message="feat: the application, blueprints, contexts and sessions",
    )
    repo.references.create("refs/tags/2.3.0", repo[first].id)
    second = commit(
        repo,
        {"src/flask/helpers.py": HELPERS},
        message="feat: url_for takes _anchor; get_flashed_messages",
    )
    repo.references.create("refs/tags/3.0.0", repo[second].id)
    return commit(
        repo,
        {"src/flask/ctx.py": CTX + "\n\nCONTEXT_VERSION = 3\n"},
        message="fix: teardown runs after an error too",
    )
