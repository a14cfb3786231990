"""mx.stream / StreamContext and the thread-bound stream helpers.

Alloy's streams are ordered queues that any thread may use, so a
"thread-unsafe" stream is an ordinary one, and a ThreadLocalStream makes one
stream per thread on first use."""
import threading


def install(mx):
    Stream, Device, DeviceType = mx.Stream, mx.Device, mx.DeviceType

    def as_device(d):
        return d if isinstance(d, Device) else Device(d)

    class ThreadLocalStream:
        """A stream of `device` that is different in each thread."""

        def __init__(self, device):
            self.device = as_device(device)
            self._local = threading.local()

        def stream(self):
            """This thread's stream (made on first use)."""
            s = getattr(self._local, "stream", None)
            if s is None:
                s = mx.new_stream(self.device)
                self._local.stream = s
            return s

        def __repr__(self):
            return f"ThreadLocalStream({self.device})"

    class StreamContext:
        """Within the block, `s` (a Stream, ThreadLocalStream, Device or
        DeviceType) is the default device and its stream the default stream."""

        def __init__(self, s):
            if not isinstance(s, (Stream, ThreadLocalStream, Device, DeviceType)):
                raise TypeError(f"[stream] expects a Stream, ThreadLocalStream, Device or DeviceType, not "
                                f"{type(s).__name__}.")
            self._target = s
            self._saved = []

        def __enter__(self):
            s = self._target
            if isinstance(s, ThreadLocalStream):
                s = s.stream()
            device = s.device if isinstance(s, Stream) else as_device(s)
            self._saved.append((mx.default_device(), mx.default_stream(device)))
            mx.set_default_device(device)
            if isinstance(s, Stream):
                mx.set_default_stream(s)
            return self

        def __exit__(self, *exc):
            device, stream = self._saved.pop()
            mx.set_default_stream(stream)
            mx.set_default_device(device)
            return False

    def stream(s):
        """A context manager making `s` the default device and stream."""
        return StreamContext(s)

    def new_thread_local_stream(device):
        """A stream of `device` unique to each thread that uses it."""
        return ThreadLocalStream(device)

    def new_thread_unsafe_stream(device):
        """A stream any thread may use (every Alloy stream may)."""
        return mx.new_stream(device)

    def clear_streams():
        """Streams here hold no resources of their own: nothing to free."""

    mx.ThreadLocalStream = ThreadLocalStream
    mx.StreamContext = StreamContext
    mx.stream = stream
    mx.new_thread_local_stream = new_thread_local_stream
    mx.new_thread_unsafe_stream = new_thread_unsafe_stream
    mx.clear_streams = clear_streams
