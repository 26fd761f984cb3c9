"""What runs inside the sandbox, and the wire it speaks; read it with grader.batch.isolation.

The worker (``python -m grader.batch.inside.worker``) imports the rebuilt kernel or the
student's file under the build guard (grader.core.build_guard), launches what the parent asks for,
times a kernel when told to (``speed_probe``), and reports in ``protocol``'s typed
messages, which the parent decodes, bounded, on its side. A job folder holds the import
closure of the worker and nothing else: this room, grader.core, the benchmark's timing
helpers and grader.batch.status. It imports no other room of grader.batch.
"""
