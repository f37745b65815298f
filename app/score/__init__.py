"""The score area of the API: how one attention score is made (router, schemas, handler, text)."""
