"""The IR: terms, access-pattern types and the operator table (each operator defined once)."""
