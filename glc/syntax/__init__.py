"""The .gls front-end: Lark grammar, reader from s-expressions to terms, and printer."""
