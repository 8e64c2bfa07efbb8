"""What the tests share and are not tests themselves: reference encoders (oracles), a stand-in
tensor (tensor_like), a thread harness (threads), torch's cast rules as data (torch_behaviour), the
`vllm serve` launcher the vLLM tests and the server benchmark start (vllm_serve), and mypy's input,
the public API as callers use it (typing_usage: checked, never run)."""
