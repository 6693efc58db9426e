"""Hand-written runtime support, copied into every generated package."""
