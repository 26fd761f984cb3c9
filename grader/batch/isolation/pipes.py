"""The parent's ends of a worker's pipes, which no process the worker leaves can block.

A daemon the worker started may hold the other end of a pipe open for ever; the parent
never waits on one for longer than POLL_S at a time (``Pipe``), and keeps the head and
tail of the worker's stderr (``Capture``).
"""

import os
import select
import threading

from grader.batch.inside import protocol

POLL_S = 0.05


class Pipe:
    """Our end of one of a worker's pipes, used by one thread, which it never blocks for long.

    A process the worker left behind may hold the other end open for ever, and closing a
    buffered stream blocks while another thread is reading it. So every wait here is a poll
    of at most POLL_S; once ``draining``, finding nothing is the end of the stream; and
    ``close`` stops the thread before it closes the descriptor."""

    def __init__(self, stream):
        self.stream = stream  # unbuffered (Popen's bufsize=0)
        self.fd = stream.fileno()
        os.set_blocking(self.fd, False)
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLOUT if stream.writable() else select.POLLIN)
        self.draining = self.closing = False
        self.thread = None

    def _ready(self):
        while not self.closing:
            if self.poller.poll(POLL_S * 1000):
                return True
            if self.draining:
                return False
        return False

    def read(self, size=65536):
        while self._ready():
            try:
                return os.read(self.fd, size)
            except BlockingIOError:
                continue
        return b""

    read1 = read

    def write(self, data):
        view = memoryview(data)
        while view:
            if not self._ready():
                raise BrokenPipeError("the pipe to the worker was closed")
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                pass

    def flush(self):
        pass

    def close(self):
        self.closing = True
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join()
        self.stream.close()


class Capture:
    """Keep the first and last ``limit`` bytes of a stream, count the rest."""

    def __init__(self, pipe, limit):
        self.head, self.tail, self.total, self.limit = bytearray(), bytearray(), 0, limit
        self.thread = pipe.thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True)
        self.thread.start()

    def _pump(self, stream):
        try:
            while chunk := stream.read1(65536):
                self.total += len(chunk)
                room = self.limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                self.tail += chunk
                del self.tail[: max(0, len(self.tail) - self.limit)]
        except (OSError, ValueError):
            pass

    def holds(self, data):
        """Whether the last bytes kept hold ``data``, without waiting for the stream's end."""
        return data in bytes(self.tail[-4096:]) or data in bytes(self.head)

    def text(self):
        self.thread.join(timeout=2)
        middle = ""
        if self.total > len(self.head) + len(self.tail):
            middle = f"\n[... {self.total - len(self.head) - len(self.tail)} bytes cut ...]\n"
        return protocol.text(
            self.head.decode("utf-8", "replace")
            + middle
            + bytes(self.tail).decode("utf-8", "replace"),
            4 * self.limit,
        )
