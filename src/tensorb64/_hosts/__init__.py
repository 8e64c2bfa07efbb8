"""Code that runs inside another package: the one patch mechanism (``patching``, over
``import_hooks``: callbacks right after a module's import, each guarded) and one module per host,
each holding its ``Host`` (what is replaced, how a release is recognised) and what it writes or
reads: ``vllm``, ``vllm_cohere``, ``dynamo_vllm``, ``sglang``, ``dynamo_sglang``, ``infinity``,
``openai_client``, ``litellm``, ``litellm_proxy``; and ``torch_tensors``, torch's tensor type registered with the
binding's reader when torch is imported.

The public modules install them: the entry points ``tensorb64.vllm_plugin`` and
``tensorb64.sglang_plugin``, ``tensorb64.infinity.patch()``, ``tensorb64.openai.patch()``, and the
handler of ``tensorb64.litellm_proxy`` (LiteLLM's proxy looks it up when it reads its config).
"""
