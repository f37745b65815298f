"""One router per area of the app; `create_app` includes each with one line."""
