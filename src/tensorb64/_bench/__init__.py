"""`python -m tensorb64 bench`: tensorb64 against the paths embedding servers and clients use today.

Every comparison is a ratio taken side by side in one process (timing.py: interleaved rounds,
medians). One runner (runner.py) and a module per section:

  base64_rows  embedding rows to base64 strings, and one request's small calls
  body         the whole /v1/embeddings body, and float rows as JSON text
  client       a response body back to one array, as clients read it today
  cuda         CUDA tensors (needs a GPU)

Needs the bench extra: pip install "tensorb64[bench]". Nothing here is imported by
`import tensorb64`.
"""
