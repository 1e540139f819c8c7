"""The WebSocket contract's state, shared by every Python reference app: the rooms of
/ws/room/NAME and the counters of /ws/counters (frames in, frames out, deliveries), which
benchlab checks a load tool's counts against. Each app's handlers are written in its own
framework's API; what they do is the same: an echo sends each frame back as it came; a room
sends a frame posted by one member to every other member, one after another, in order."""

import json


class Counters:
    def __init__(self) -> None:
        self.frames_in = 0  # frames received from clients (echo and rooms)
        self.frames_out = 0  # frames sent to clients (echoes and deliveries)
        self.deliveries = 0  # frames a room sent to a member

    def body(self) -> bytes:
        return json.dumps(
            {"frames_in": self.frames_in, "frames_out": self.frames_out,
             "deliveries": self.deliveries},
            separators=(",", ":"),
        ).encode()  # fmt: skip


COUNTERS = Counters()
ROOMS: dict[str, list] = {}  # name -> members, in the order they joined


def join(name: str, member) -> list:
    members = ROOMS.setdefault(name, [])
    members.append(member)
    return members


def leave(name: str, member) -> None:
    members = ROOMS.get(name, [])
    if member in members:
        members.remove(member)
    if not members:
        ROOMS.pop(name, None)


def others(name: str, member) -> list:
    """The room's other members at the moment a frame is posted."""
    return [peer for peer in ROOMS.get(name, ()) if peer is not member]


async def deliver(peers: list, send) -> None:
    """A posted frame to each peer in turn (`await send(peer)`), counted; a peer that left
    meanwhile is skipped."""
    for peer in peers:
        try:
            await send(peer)
        except Exception:  # a member that left meanwhile
            continue
        COUNTERS.frames_out += 1
        COUNTERS.deliveries += 1
