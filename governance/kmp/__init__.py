"""KMP, the Kernel Memory Protocol (navigable process memory): memory organised by ``about`` (a case),
``dimensions`` inside it, entries crossed by time, and writer-declared relations. These are its pure
rules: relation grading, read scopes, timeline cursors, ask's confidence and failure diagnosis. The
kernel validates and grades; it never infers meaning. No Kafka, no SQL, no models."""
