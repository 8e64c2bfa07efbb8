"""What the ingestion adapters (``tensorb64.ray``, ``tensorb64.daft``) share: the HTTP client
that posts texts to a ``/v1/embeddings`` server and reads each body natively (``http``)."""
