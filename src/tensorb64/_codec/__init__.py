"""The calls behind the public encoders and decoders, over the binding (``_native``).

* ``inputs``: what the binding's reader cannot read in place, converted once or refused;
  ``input_hook``: the hook through which the binding hands such an input back.
* ``encode``: ``encode_binary_body`` (the other encoders are the binding's own functions).
* ``decode``: base64 rows and vLLM's binary bodies back to arrays.
* ``body``: a response body written (the rows read and cut, the envelope laid out).
* ``body_reader``: a response body read back into one array.

A CUDA input is the ``_cuda`` room's: where an input enters (``inputs``, ``body.batch_rows``,
``encode.encode_binary_body``) the CUDA room decides once how it is read, and the decision is
passed down with it.
"""
