"""L8 Workflow Plane: cycles, phases, policies, personas and artifacts as Markdown (I-4).

registry.py loads and cross-checks `workflows/` fail-closed into the objects of model.py;
signals.py compiles and evaluates CEL signals; policy.py decides and merges policy
decisions and fans findings in; fanout.py runs a phase's personas through L3; engine.py
runs a cycle and records every transition as a workflow.* event. Nothing here is imported
by `import agentos_kernel`: celpy loads only when a cycle runs or is validated.
"""
