"""The HTTP client the ingestion adapters share (tensorb64._ingest.http), against the local
server on 127.0.0.1 (tests/support/embeddings_server.py): bodies as vLLM, SGLang and OpenAI write
them read bit for bit as json.loads + numpy read them, retries, failures named by their rows.
Standard library only: this runs in the default suite; the engines' tests are tests/test_ingest.py."""

from __future__ import annotations

import contextlib
import functools
import http.client
import pickle
import re
import socket
import ssl
import threading
import time

import numpy as np
import pytest

from tensorb64._ingest.http import EmbeddingRequestError, EmbeddingsEndpoint, _retry_after
from tests.support.embeddings_server import LocalServer, Written
from tests.support.ingest_server import SHAPES, Failing, expected, same_bits, self_signed, vectors

TABLE = vectors(300, 96)
TEXTS = [f"row {i}" for i in (5, 3, 299, 0, 17, 17, 42, 8, 1, 250)]


def endpoint(server, **options) -> EmbeddingsEndpoint:
    return EmbeddingsEndpoint(server.base_url, "m", **{"backoff_s": 0.01, "timeout": 10, **options})


@pytest.mark.parametrize("layout,encoding_format,float_format", SHAPES)
@pytest.mark.parametrize("dimensions", [None, 40])
def test_bodies_read_as_json_loads_and_numpy(layout, encoding_format, float_format, dimensions):
    with LocalServer(Written(TABLE, layout=layout, float_format=float_format)) as server:
        got = endpoint(server, encoding_format=encoding_format, dimensions=dimensions).embed(TEXTS)
    want = expected(TABLE, TEXTS, layout=layout, encoding_format=encoding_format, float_format=float_format,
                    dimensions=dimensions)
    assert same_bits(got, want)
    assert same_bits(got, TABLE[[int(t.split()[1]) for t in TEXTS], : dimensions or 96])  # the rows, in order


@pytest.mark.parametrize("max_in_flight", [1, 3])
def test_requests_of_request_size_keep_the_order(max_in_flight):
    texts = [f"row {i}" for i in range(299, 0, -3)]
    with LocalServer(Written(TABLE)) as server:
        client = endpoint(server, request_size=7, max_in_flight=max_in_flight, encoding_format="float")
        got = client.embed(texts)
        assert server.requests == -(-len(texts) // 7)
        client.close()
    assert same_bits(got, TABLE[list(range(299, 0, -3))])


def test_one_connection_is_kept_alive():
    with LocalServer(Written(TABLE)) as server:
        client = endpoint(server)
        for _ in range(5):
            client.embed(TEXTS[:3])
        assert client._transport._idle.qsize() == 1  # the one connection, back in the pool after each request
        client.close()
        assert client._transport._idle.qsize() == 0


def test_empty_input_sends_nothing():
    with LocalServer(Written(TABLE)) as server:
        assert endpoint(server).embed([]).shape == (0, 0)
        assert endpoint(server, dimensions=12).embed([]).shape == (0, 12)
        assert server.requests == 0


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 408])
def test_retried_statuses(status):
    answer = Failing(Written(TABLE), failures=2, status=status)
    with LocalServer(answer) as server:
        got = endpoint(server, max_retries=2).embed(TEXTS)
        assert server.requests == 3
    assert same_bits(got, TABLE[[int(t.split()[1]) for t in TEXTS]])


def test_retry_after_is_waited_for():
    answer = Failing(Written(TABLE), failures=1, status=429, headers={"Retry-After": "0.3"})
    with LocalServer(answer) as server:
        started = time.monotonic()
        endpoint(server, backoff_s=0).embed(TEXTS)
        assert time.monotonic() - started >= 0.3
    assert _retry_after("2") == 2.0 and _retry_after("soon") is None and _retry_after(None) is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date past: no wait


def test_retry_after_is_capped():
    answer = Failing(Written(TABLE), failures=1, status=503, headers={"Retry-After": "3600"})
    with LocalServer(answer) as server:
        started = time.monotonic()
        endpoint(server, max_backoff_s=0.05).embed(TEXTS)
        assert time.monotonic() - started < 5


def test_a_batch_that_fails_for_good_names_its_rows_and_the_message():
    texts = [f"row {i}" for i in range(20)]
    answer = Failing(Written(TABLE), status=503, body=b'{"error":{"message":"the model is loading"}}', always={13})
    with LocalServer(answer) as server:
        client = endpoint(server, request_size=5, max_retries=2)
        with pytest.raises(EmbeddingRequestError) as caught:
            client.embed(texts)
        assert server.requests == 2 + 3  # rows 0..4 and 5..9 answered, then 10..14 sent three times
    error = caught.value
    assert error.rows == range(10, 15) and error.status == 503 and "the model is loading" in error.message
    assert "rows 10..14 of the batch (5 texts)" in str(error) and "after 2 retries" in str(error)
    again = pickle.loads(pickle.dumps(error))  # as an engine sends it from a worker
    assert (again.rows, again.status, again.message, str(again)) == (error.rows, error.status, error.message, str(error))


@pytest.mark.parametrize("body,message", [(b'{"error":{"message":"bad key"}}', "bad key"),
                                          (b'{"message":"too long","type":"BadRequestError"}', "too long"),
                                          (b'{"detail":"Not authenticated"}', "Not authenticated"),
                                          (b"upstream exploded", "upstream exploded"), (b"", "(an empty body)")])
def test_client_errors_are_not_retried(body, message):
    with LocalServer(Failing(Written(TABLE), status=400, body=body, always={3})) as server:
        with pytest.raises(EmbeddingRequestError, match=r"rows 0\.\.1 of the batch.*400 Bad Request: " + re.escape(message)):
            endpoint(server).embed(["row 1", "row 3"])
        assert server.requests == 1


def test_a_server_that_is_not_there():
    with LocalServer(Written(TABLE)) as server:
        base_url = server.base_url
    with pytest.raises(EmbeddingRequestError, match="ConnectionRefusedError") as caught:
        EmbeddingsEndpoint(base_url, "m", max_retries=1, backoff_s=0.01).embed(["row 1"])
    assert caught.value.status is None


def test_a_host_name_not_found_is_reported_at_once(monkeypatch):
    """A name the resolver does not know will not be known a moment later: reported at once (not
    after five retries and their backoff), naming the rows."""
    asked = []

    def getaddrinfo(host, *args, **kwargs):
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    client = EmbeddingsEndpoint("http://embeddings.example.invalid/v1", "m", request_size=2)  # backoff 0.5 s, 5 retries
    started = time.monotonic()
    with pytest.raises(EmbeddingRequestError) as caught:
        client.embed(["row 1", "row 2", "row 3"])
    assert time.monotonic() - started < 3 and len(asked) == 1
    assert "rows 0..1 of the batch (2 texts)" in str(caught.value) and "gaierror" in str(caught.value)
    assert "retr" not in str(caught.value) and caught.value.status is None


@pytest.mark.parametrize("code", ["EAI_AGAIN", "EAI_FAIL", "EAI_MEMORY"])
def test_a_resolver_failure_that_may_pass_is_asked_again(monkeypatch, code):
    """A resolver that did not answer in time (EAI_AGAIN), failed (EAI_FAIL: a server refusing or
    failing its query, which recovers) or ran out of memory (EAI_MEMORY) says nothing of the
    name: asked again."""
    if not hasattr(socket, code):
        pytest.skip(f"this platform's socket module has no {code}")
    asked = []

    def getaddrinfo(host, *args, **kwargs):
        asked.append(host)
        raise socket.gaierror(getattr(socket, code), "the resolver failed")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(EmbeddingRequestError, match="after 2 retries"):
        EmbeddingsEndpoint("http://embeddings.example.invalid/v1", "m", max_retries=2, backoff_s=0.01).embed(["row 1"])
    assert len(asked) == 3


@pytest.fixture
def certificate(tmp_path):
    """(the certificate's file, a server context holding it) of a self-signed certificate for
    127.0.0.1."""
    made = self_signed(tmp_path)
    if made is None:
        pytest.skip("openssl (the command) makes the server's self-signed certificate; it is not installed")
    return made


@contextlib.contextmanager
def tls_handshakes(context):
    """A server on 127.0.0.1 that only makes TLS handshakes with ``context``: (its base URL, the
    list of handshakes begun)."""
    listener = socket.create_server(("127.0.0.1", 0))
    handshakes: list = []

    def serve():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            handshakes.append(1)
            try:
                context.wrap_socket(connection, server_side=True).close()
            except (ssl.SSLError, OSError):  # the client refuses the certificate
                connection.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/v1", handshakes
    finally:
        listener.close()


def test_a_certificate_refused_is_reported_at_once(certificate):
    """A TLS certificate the client does not trust will not be trusted a moment later: reported
    at once, naming the rows, after one handshake."""
    with tls_handshakes(certificate[1]) as (base_url, handshakes):
        client = EmbeddingsEndpoint(base_url, "m", timeout=10)
        started = time.monotonic()
        with pytest.raises(EmbeddingRequestError) as caught:
            client.embed(["row 1", "row 2"])
        assert time.monotonic() - started < 3
    assert "rows 0..1 of the batch (2 texts)" in str(caught.value) and "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert "retr" not in str(caught.value) and len(handshakes) == 1


@pytest.mark.parametrize("where", ["reading the answer on a new connection", "sending on a reused connection"])
def test_a_tls_record_error_after_the_handshake_is_retried(monkeypatch, where):
    """A TLS error of an established connection (a record that fails its MAC check, an alert mid
    stream) is that connection's, not the server's refusal: asked again on a new connection, as
    urllib3 does. (Raised here by http.client's own calls over plain HTTP: the classification is
    by where the error comes from, not by the bytes.)"""
    record_error = ssl.SSLError(1, "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] decryption failed or bad record mac")
    raised = []
    method = "getresponse" if where.startswith("reading") else "send"
    original = getattr(http.client.HTTPConnection, method)

    def fails_once(self, *args, **kwargs):
        if not raised and (method == "getresponse" or requests_before):
            raised.append(1)
            raise record_error
        return original(self, *args, **kwargs)

    with LocalServer(Written(TABLE)) as server:
        client = endpoint(server)
        requests_before = 0
        if method == "send":  # a pooled connection that has answered once
            client.embed(TEXTS[:1])
            requests_before = server.requests
        monkeypatch.setattr(http.client.HTTPConnection, method, fails_once)
        got = client.embed(TEXTS)
        assert raised == [1] and server.requests - requests_before == (2 if method == "getresponse" else 1)
        client.close()
    assert same_bits(got, TABLE[[int(t.split()[1]) for t in TEXTS]])


def test_a_tls_handshake_refused_is_reported_at_once():
    """A handshake the server cannot take (here an https:// URL to a plain HTTP server: no TLS
    answer at all) will be refused again: reported at once, naming the rows."""
    with LocalServer(Written(TABLE)) as server:
        client = EmbeddingsEndpoint(server.base_url.replace("http://", "https://"), "m", timeout=10)
        started = time.monotonic()
        with pytest.raises(EmbeddingRequestError) as caught:
            client.embed(["row 1", "row 2"])
        assert time.monotonic() - started < 3 and server.requests == 0
    assert "rows 0..1 of the batch (2 texts)" in str(caught.value) and "SSL" in str(caught.value)
    assert "retr" not in str(caught.value)


def test_the_retries_before_an_unreadable_body_are_counted():
    answer = Failing(lambda request: (200, {}, b'{"data":[{"index":0,"embedding":"AAA"}]}'), failures=2, status=503)
    with LocalServer(answer) as server:
        with pytest.raises(EmbeddingRequestError, match=r"failed \(after 2 retries\): the response body could not be read"):
            endpoint(server).embed(["row 1"])
        assert server.requests == 3


def test_a_body_of_the_wrong_rows_is_refused():
    def short(request):
        return Written(TABLE)({**request, "input": request["input"][:-1]})

    with LocalServer(short) as server:
        with pytest.raises(EmbeddingRequestError, match="has 1 embeddings for 2 inputs"):
            endpoint(server).embed(["row 1", "row 2"])
    with LocalServer(lambda request: (200, {}, b'{"data":[{"index":0,"embedding":"AAA"}]}')) as server:
        with pytest.raises(EmbeddingRequestError, match="could not be read"):
            endpoint(server).embed(["row 1"])


def test_dimensions_are_checked():
    with LocalServer(lambda request: Written(TABLE)({**request, "dimensions": 8})) as server:
        with pytest.raises(EmbeddingRequestError, match="have 8 values, not the 9 asked for"):
            endpoint(server, dimensions=9).embed(["row 1"])


def test_headers_and_api_key_are_sent():
    with LocalServer(Written(TABLE)) as server:
        endpoint(server, api_key="sk-test", headers={"X-Tenant": "t1"}).embed(["row 1"])
        assert server.last_headers["Authorization"] == "Bearer sk-test" and server.last_headers["X-Tenant"] == "t1"


def test_the_endpoint_pickles_without_its_connections():
    with LocalServer(Written(TABLE)) as server:
        client = endpoint(server, max_in_flight=2, request_size=1)
        client.embed(TEXTS[:2])
        again = pickle.loads(pickle.dumps(client))
        assert same_bits(again.embed(TEXTS[:2]), client.embed(TEXTS[:2]))
        client.close()
        again.close()


@pytest.mark.parametrize("options,error,message", [
    ({"base_url": 8000}, TypeError, "base_url must be a str"),
    ({"base_url": "127.0.0.1:8000/v1"}, ValueError, "http:// or https:// URL"),
    ({"model": None}, TypeError, "model must be a str"),
    ({"encoding_format": "bytes"}, ValueError, "'base64' or 'float'"),
    ({"dimensions": 0}, ValueError, "dimensions must be a positive int"),
    ({"dimensions": True}, ValueError, "dimensions must be a positive int"),
    ({"max_retries": -1}, ValueError, "max_retries must be an int >= 0"),
    ({"max_in_flight": 0}, ValueError, "max_in_flight must be an int >= 1"),
    ({"request_size": 0}, ValueError, "request_size must be a positive int"),
    ({"timeout": -1}, ValueError, "timeout must be a number of seconds"),
    ({"http_client": object()}, TypeError, "http_client must be a zero-argument callable"),
])
def test_bad_options(options, error, message):
    with pytest.raises(error, match=message):
        EmbeddingsEndpoint(**{"base_url": "http://127.0.0.1:1/v1", "model": "m", **options})


def test_inputs_must_be_strings():
    client = EmbeddingsEndpoint("http://127.0.0.1:1/v1", "m")
    with pytest.raises(TypeError, match="row 1 is int"):
        client.embed(["a", 3])
    assert np.asarray(client.embed(())).size == 0


# -- the same rules through a user's httpx client ----------------------------------------------


@pytest.fixture(params=["httpx", "httpx2"])
def httpx(request):
    """httpx, and httpx2 (its fork, which openai 3 runs on)."""
    return pytest.importorskip(request.param, reason=f"{request.param} is not installed here (the test extra and the "
                               "ingest venv install it)")


def through(httpx, base_url: str, **options) -> EmbeddingsEndpoint:
    return EmbeddingsEndpoint(base_url, "m", **{"backoff_s": 0.01, "http_client": functools.partial(httpx.Client),
                                                **options})


def flaky(httpx, errors: list, seen: list):
    """A factory of clients whose transport raises each of ``errors`` in turn before it sends a
    request, then sends them (recording each request's timeout in ``seen``)."""

    class Flaky(httpx.HTTPTransport):
        def handle_request(self, request):
            seen.append(request.extensions.get("timeout"))
            if errors:
                raise errors.pop(0)
            return super().handle_request(request)

    return lambda: httpx.Client(transport=Flaky(), timeout=7.0)


@pytest.mark.parametrize("encoding_format", ["base64", "float"])
def test_httpx_reads_the_bodies_with_the_clients_own_settings(httpx, encoding_format):
    made = []

    def factory():
        made.append(httpx.Client(headers={"X-Tenant": "t9"}))
        return made[-1]

    with LocalServer(Written(TABLE)) as server:
        client = through(httpx, server.base_url, http_client=factory, api_key="sk-test", encoding_format=encoding_format,
                         request_size=4, max_in_flight=2)
        got = client.embed(TEXTS)
        assert server.last_headers["X-Tenant"] == "t9" and server.last_headers["Authorization"] == "Bearer sk-test"
        assert server.requests == 3 and len(made) == 1  # one client, made on first use, for every thread
        client.close()
    assert made[0].is_closed
    assert same_bits(got, expected(TABLE, TEXTS, layout="vllm", encoding_format=encoding_format, float_format="shortest"))


def test_httpx_trusts_what_its_client_is_told_to(httpx, certificate):
    """A client told to trust the server's certificate (``verify``) reads its bodies; the default
    pool, and a client told nothing, refuse it at once."""
    cert, context = certificate
    with LocalServer(Written(TABLE), tls=context) as server:
        trusting = functools.partial(httpx.Client, verify=ssl.create_default_context(cafile=str(cert)))
        assert same_bits(through(httpx, server.base_url, http_client=trusting).embed(TEXTS[:3]), TABLE[[5, 3, 299]])
    with tls_handshakes(context) as (base_url, handshakes):
        started = time.monotonic()
        with pytest.raises(EmbeddingRequestError) as caught:
            through(httpx, base_url).embed(["row 1", "row 2"])
        assert time.monotonic() - started < 3
    assert "rows 0..1 of the batch (2 texts)" in str(caught.value) and "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert "retr" not in str(caught.value) and len(handshakes) == 1 and caught.value.status is None


def test_httpx_retries_and_failures(httpx):
    with LocalServer(Failing(Written(TABLE), failures=2, status=429, headers={"Retry-After": "0"})) as server:
        assert same_bits(through(httpx, server.base_url).embed(TEXTS), TABLE[[int(t.split()[1]) for t in TEXTS]])
        assert server.requests == 3  # 429, 429, then 200
    texts = [f"row {i}" for i in range(20)]
    answer = Failing(Written(TABLE), status=503, body=b'{"error":{"message":"the model is loading"}}', always={13})
    with LocalServer(answer) as server:
        with pytest.raises(EmbeddingRequestError) as caught:
            through(httpx, server.base_url, request_size=5, max_retries=2).embed(texts)
        assert server.requests == 2 + 3
    assert caught.value.rows == range(10, 15) and caught.value.status == 503
    assert "rows 10..14 of the batch (5 texts)" in str(caught.value) and "after 2 retries" in str(caught.value)
    assert "the model is loading" in caught.value.message
    with LocalServer(Failing(Written(TABLE), status=400, body=b'{"message":"too long"}', always={3})) as server:
        with pytest.raises(EmbeddingRequestError, match=r"rows 0\.\.1 of the batch.*400 Bad Request: too long"):
            through(httpx, server.base_url).embed(["row 1", "row 3"])
        assert server.requests == 1
        base_url = server.base_url
    with pytest.raises(EmbeddingRequestError, match=r"after 1 retry\): ConnectError") as caught:  # nothing listens
        through(httpx, base_url, max_retries=1).embed(["row 1"])
    assert caught.value.status is None


def test_httpx_what_is_asked_again_and_what_is_not(httpx, monkeypatch):
    """Errors after connecting (a read cut, the server gone mid-answer) are asked again; a TLS
    handshake refused, or a host name not found, is reported at once, naming the rows."""
    seen: list = []
    errors = [httpx.ReadError("the connection was reset"), httpx.RemoteProtocolError("Server disconnected")]
    with LocalServer(Written(TABLE)) as server:
        got = through(httpx, server.base_url, http_client=flaky(httpx, errors, seen)).embed(TEXTS)
        assert errors == [] and len(seen) == 3 and server.requests == 1
        assert seen[-1]["read"] == 7.0  # the client's own timeout, where none is given
        through(httpx, server.base_url, http_client=flaky(httpx, [], seen), timeout=2.5).embed(TEXTS[:1])
        assert seen[-1]["read"] == 2.5
        with pytest.raises(EmbeddingRequestError) as caught:  # https to a plain HTTP server: no TLS answer
            through(httpx, server.base_url.replace("http://", "https://")).embed(["row 1"])
        assert "ConnectError" in str(caught.value) and "retr" not in str(caught.value) and server.requests == 2
    assert same_bits(got, TABLE[[int(t.split()[1]) for t in TEXTS]])
    asked = []

    def getaddrinfo(host, *args, **kwargs):
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    started = time.monotonic()
    with pytest.raises(EmbeddingRequestError) as caught:
        EmbeddingsEndpoint("http://embeddings.example.invalid/v1", "m",  # backoff 0.5 s, 5 retries
                           http_client=httpx.Client).embed(["row 1", "row 2"])
    assert time.monotonic() - started < 3 and asked == ["embeddings.example.invalid"]
    assert "rows 0..1 of the batch (2 texts)" in str(caught.value) and "Name or service not known" in str(caught.value)


def test_httpx_the_endpoint_pickles_with_its_factory_not_its_client(httpx):
    with LocalServer(Written(TABLE)) as server:
        client = through(httpx, server.base_url, http_client=functools.partial(httpx.Client, headers={"X-Tenant": "t2"}))
        first = client.embed(TEXTS[:2])
        again = pickle.loads(pickle.dumps(client))  # as Ray and Daft send it to each worker
        assert again._transport._client is None  # made anew in that process, on first use
        assert same_bits(again.embed(TEXTS[:2]), first) and server.last_headers["X-Tenant"] == "t2"
        client.close()
        again.close()


def test_httpx_a_subclass_of_the_client_is_a_client(httpx):
    class Tenant(httpx.Client):  # a user's own client class, in a module of theirs
        def __init__(self):
            super().__init__(headers={"X-Tenant": "sub"})

    with LocalServer(Written(TABLE)) as server:
        assert same_bits(through(httpx, server.base_url, http_client=Tenant).embed(TEXTS[:2]), TABLE[[5, 3]])
        assert server.last_headers["X-Tenant"] == "sub"


def test_httpx_a_factory_must_make_a_client(httpx):
    with pytest.raises(TypeError, match=r"http_client\(\) must return an httpx.Client .*got builtins.object"):
        EmbeddingsEndpoint("http://127.0.0.1:1/v1", "m", http_client=object).embed(["row 1"])
    with pytest.raises(TypeError, match="not a client: the adapters' arguments are sent to each engine worker"):
        EmbeddingsEndpoint("http://127.0.0.1:1/v1", "m", http_client=httpx.Client())
