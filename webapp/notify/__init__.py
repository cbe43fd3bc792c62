"""Telling search engines: one module per engine (`indexnow`, `gsc`, `ping`) on one send
function (`base`), and the ledger of every announcement that delivery runs from (`ledger`)."""
