"""The gate's read side: the HTTP write gateway (``gateway``) and the read models of claws
(``claws``) and of every inbound record's verdict (``audit``)."""
