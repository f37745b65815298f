"""Every bad request gets a 4xx whose `detail` is a sentence a student can act on.

Schema errors keep FastAPI's list under `errors` for programs, but `detail` becomes one readable
sentence ("temperature must be greater than 0"), so the page never shows raw pydantic output.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from .middleware import SECURITY_HEADERS

# What a strict field wants, in words, and how a JSON value of the wrong type is named.
WANTS = {"int_type": "a whole number", "float_type": "a number", "bool_type": "true or false",
         "string_type": "a string", "list_type": "a list", "tuple_type": "a list"}  # fmt: skip
JSON_TYPES = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list",
              dict: "an object", type(None): "null"}  # fmt: skip


class BadInput(ValueError):
    """The request is well-formed but impossible for this model or these limits: a 422."""


class UnknownModel(LookupError):
    """The request names a model that is not loaded: a 404."""


class Busy(RuntimeError):
    """The server cannot take this now (the model queue is full, another measurement runs): a 503 whose
    Retry-After says when to try again. Refused at once: nothing waits on a shared thread."""

    def __init__(self, message: str, retry_after: float = 5) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


class Replaced(RuntimeError):
    """A newer request of the same kind from the same client replaced this one before it ran: a 409."""


class ClientGone(RuntimeError):
    """The client disconnected before its model work started; nobody reads the answer (499, as nginx)."""


def sentence(e: Exception) -> str:
    """A lab's ValueError ("the order must list ...") as a sentence for the page."""
    msg = str(e)
    return f"{msg[0].upper()}{msg[1:]}." if msg else "The request is invalid."


def describe_error(err: dict) -> str:
    loc = [str(p) for p in err.get("loc", ()) if p != "body"]
    field = ".".join(loc) or "the request body"
    kind, msg = err.get("type", ""), err.get("msg", "is invalid")
    if kind == "json_invalid":
        ctx = err.get("ctx", {}).get("error", "")
        return (
            f"The request body is not valid JSON ({ctx})." if ctx else "The request body is not valid JSON."
        )
    if kind == "extra_forbidden":
        return f"Unknown field '{field}': remove it (see /docs for the accepted fields)."
    if kind == "missing":
        return (
            f"The field '{field}' is required."
            if loc
            else "The request body is required: send a JSON object."
        )
    if kind == "model_attributes_type":
        return "The request body must be a JSON object."
    if kind in WANTS:
        got = err.get("input")
        shown = f" ({got!r})" if isinstance(got, str) and len(got) <= 20 else ""
        if isinstance(got, float) and got.is_integer() and kind == "int_type":
            shown = f" ({got!r}: write it without the decimal point)"
        return f"{field} must be {WANTS[kind]}, not {JSON_TYPES.get(type(got), 'this value')}{shown}."
    msg = msg.removeprefix("Value error, ")
    return f"{field}: {msg[0].lower()}{msg[1:]}." if msg else f"{field} is invalid."


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    sentences = list(dict.fromkeys(describe_error(e) for e in errors))
    detail = " ".join(sentences) if sentences else "The request is invalid."
    safe = [{k: e[k] for k in ("type", "loc", "msg") if k in e} for e in errors]  # inputs may be huge
    return JSONResponse({"detail": detail, "errors": safe}, status_code=422)


def unreadable_body(cause: BaseException | None) -> str | None:
    """The sentence for a body FastAPI could not parse (it answers a bare 400), or None if not one."""
    if isinstance(cause, RecursionError):
        return "The request body is nested too deeply to read: send a flat JSON object (see /docs)."
    if isinstance(cause, UnicodeDecodeError):
        return "The request body is not valid UTF-8 text: send JSON encoded as UTF-8."
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return "The request body holds a number with thousands of digits: send ordinary numbers."
    if isinstance(cause, (ValueError, TypeError)):
        return "The request body could not be read as JSON: send a JSON object (see /docs)."
    return None


def http_error(not_found_page: Callable[[Request], Response | None]):
    """The HTTPException handler; `not_found_page(request)` gives the HTML 404 for a page address (or None
    for an API path). Passed in by `install` so that errors.py needs nothing of pages.py (which needs the
    runtime, which raises our errors)."""

    async def handle(request: Request, exc: HTTPException) -> Response:
        why = unreadable_body(exc.__cause__) if exc.status_code == 400 else None
        if why is not None:
            return JSONResponse({"detail": why}, status_code=422)
        if exc.status_code == 404:
            page = not_found_page(request)
            if page is not None:
                return page
        return await http_exception_handler(request, exc)

    return handle


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug: a sentence instead of bare text (the traceback is still logged by the server). This answer
    is sent from outside every middleware, so it carries the security headers itself."""
    body = {"detail": "Something went wrong inside the server on this request; it has been logged. "
            "Try again, or try a shorter or different input."}  # fmt: skip
    return JSONResponse(body, status_code=500, headers=SECURITY_HEADERS)


async def bad_input(request: Request, exc: BadInput) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=422)


async def unknown_model(request: Request, exc: UnknownModel) -> JSONResponse:
    return JSONResponse({"detail": str(exc.args[0])}, status_code=404)


async def busy(request: Request, exc: Busy) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": str(exc.retry_after)})


async def replaced(request: Request, exc: Replaced) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=409)


async def client_gone(request: Request, exc: ClientGone) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=499)


def install(app: FastAPI, not_found_page: Callable[[Request], Response | None]) -> None:
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error(not_found_page))
    app.add_exception_handler(Exception, internal_error)
    app.add_exception_handler(BadInput, bad_input)
    app.add_exception_handler(UnknownModel, unknown_model)
    app.add_exception_handler(Busy, busy)
    app.add_exception_handler(Replaced, replaced)
    app.add_exception_handler(ClientGone, client_gone)
