"""`RequestBudget`: a bound on the request bytes the server works on.

A request's memory grows with its payload: a 30 MB text costs the
server about 25 to 50 times that while it is parsed, copied into a
tensor and tokenized. The thread pools bound how many requests run,
not how large they are, so a few large requests at once could take the
machine's memory. The budget bounds their sum instead
(`--max_request_bytes_in_flight`):

- a request is admitted while the payload bytes in flight, its own
  included, stay within the budget, in arrival order (a large request
  is not passed over forever by small ones);
- one that does not fit waits (up to the caller's timeout) behind the
  others; the requests waiting are bounded too, by as many bytes again:
  past that, or after its wait, a request is refused with
  `RESOURCE_EXHAUSTED` (gRPC's code; HTTP 429), so a client may retry.

The REST API admits a body by its `Content-Length` before reading it,
so a waiting REST request holds no payload; the gRPC API admits a
request by its size once grpcio has received it
(`grpc.max_receive_message_length` bounds that).

```python
budget = RequestBudget(64 << 20)
ticket = budget.admit(len(body))  # may raise RESOURCE_EXHAUSTED
ticket.wait(30)                   # or `await ticket.wait_async(30)`
try:
    ...  # run the request
finally:
    ticket.release()
```
"""

import asyncio
import collections
import threading

from attention_zoo.serving.status import ServingError

FLAG = "--max_request_bytes_in_flight"


class RequestBudget:
    """The request bytes in flight, bounded (see the module docstring).

    Args:
        limit: int, the most payload bytes of the requests running at
            once (at least the largest request, `--max_request_bytes`).
    """

    def __init__(self, limit):
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"limit must be an int. Received: {limit!r}")
        if limit <= 0:
            raise ValueError(f"limit must be positive. Received: {limit}")
        self.limit = limit
        self._lock = threading.Lock()
        self._in_flight = 0
        self._waiting = collections.deque()  # tickets, in arrival order
        self._waiting_bytes = 0

    @property
    def in_flight(self):
        """The payload bytes of the requests admitted and not released."""
        with self._lock:
            return self._in_flight

    @property
    def waiting(self):
        """The number of requests waiting to be admitted."""
        with self._lock:
            return len(self._waiting)

    def admit(self, size):
        """A `Ticket` for a request of `size` bytes: granted at once when
        it fits, else waiting in line.

        Raises:
            ServingError: RESOURCE_EXHAUSTED, the line is full (the bytes
                waiting would pass the limit).
        """
        size = max(int(size), 0)
        ticket = Ticket(self, size)
        with self._lock:
            if not self._waiting and self._fits(size):
                self._grant(ticket)
                return ticket
            if self._waiting and self._waiting_bytes + size > self.limit:
                raise self._exhausted(size, "as many bytes are waiting")
            self._waiting.append(ticket)
            self._waiting_bytes += size
        return ticket

    def _fits(self, size):
        # A request larger than the whole budget runs alone.
        return self._in_flight + size <= self.limit or not self._in_flight

    def _grant(self, ticket):
        self._in_flight += ticket.size
        ticket._state = Ticket.GRANTED
        ticket._granted.set()
        for notify in ticket._callbacks:
            notify()

    def _release(self, ticket):
        with self._lock:
            if ticket._state == Ticket.GRANTED:
                self._in_flight -= ticket.size
            elif ticket._state == Ticket.WAITING:  # left the line
                self._waiting.remove(ticket)
                self._waiting_bytes -= ticket.size
            ticket._state = Ticket.DONE
            self._admit_waiting()

    def _give_up(self, ticket, timeout):
        """Takes a ticket out of line after its wait; `None` when it was
        admitted in the meantime, else the error to raise."""
        with self._lock:
            if ticket._state == Ticket.GRANTED:
                return None
            if ticket._state == Ticket.WAITING:
                self._waiting.remove(ticket)
                self._waiting_bytes -= ticket.size
                ticket._state = Ticket.DONE
                self._admit_waiting()  # those behind it may fit now
            return self._exhausted(ticket.size, f"it waited {timeout:g} s")

    def _admit_waiting(self):
        while self._waiting and self._fits(self._waiting[0].size):
            head = self._waiting.popleft()
            self._waiting_bytes -= head.size
            self._grant(head)

    def _exhausted(self, size, why):
        return ServingError(
            "RESOURCE_EXHAUSTED",
            f"The server is busy: {self._in_flight} bytes of requests are "
            f"in flight and a request of {size} bytes would pass the limit "
            f"of {self.limit} bytes ({FLAG}) and {why}; retry later",
        )


class Ticket:
    """One request's place in a `RequestBudget`: wait, then release."""

    WAITING, GRANTED, DONE = "waiting", "granted", "done"

    def __init__(self, budget, size):
        self.size = size
        self._budget = budget
        self._state = self.WAITING
        self._granted = threading.Event()
        self._callbacks = []  # called, under the budget's lock, on grant

    def wait(self, timeout):
        """Blocks until admitted.

        Raises:
            ServingError: RESOURCE_EXHAUSTED, not admitted within
                `timeout` seconds (the ticket is then released).
        """
        if not self._granted.wait(timeout):
            self._give_up(timeout)

    async def wait_async(self, timeout):
        """`wait` for a coroutine: the event loop keeps running."""
        loop = asyncio.get_running_loop()
        granted = loop.create_future()

        def notify():
            try:
                loop.call_soon_threadsafe(_set_result, granted)
            except RuntimeError:  # the loop has closed: nobody waits
                pass

        with self._budget._lock:
            if self._state != self.WAITING:
                return
            self._callbacks.append(notify)
        try:
            await asyncio.wait_for(granted, timeout)
        except asyncio.TimeoutError:
            self._give_up(timeout)
        except BaseException:  # cancelled: the place is given back
            self.release()
            raise

    def _give_up(self, timeout):
        error = self._budget._give_up(self, timeout)
        if error is not None:
            raise error

    def release(self):
        """Gives the bytes back (or the place in line); idempotent."""
        if self._state != self.DONE:
            self._budget._release(self)


def _set_result(future):
    if not future.done():
        future.set_result(None)
