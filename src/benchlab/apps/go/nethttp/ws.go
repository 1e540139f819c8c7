// The WebSocket contract (docs/scenarios.md) on gorilla/websocket: /ws/echo sends each frame
// back as it came; /ws/room/NAME sends a frame posted by one member to every other member,
// one after another, in order; /ws/counters counts frames in, frames out and deliveries.
package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	CheckOrigin:     func(r *http.Request) bool { return true },
}

var framesIn, framesOut, deliveries atomic.Int64

// member is one connection of a room: gorilla allows one writer at a time per connection.
type member struct {
	conn  *websocket.Conn
	write sync.Mutex
}

type room struct {
	mu      sync.Mutex
	members []*member
}

var rooms sync.Map // name -> *room

func (r *room) others(m *member) []*member {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*member, 0, len(r.members))
	for _, peer := range r.members {
		if peer != m {
			out = append(out, peer)
		}
	}
	return out
}

func (r *room) leave(m *member) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, peer := range r.members {
		if peer == m {
			r.members = append(r.members[:i], r.members[i+1:]...)
			return
		}
	}
}

func wsEcho(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		framesIn.Add(1)
		if conn.WriteMessage(kind, data) != nil {
			return
		}
		framesOut.Add(1)
	}
}

func wsRoom(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/ws/room/")
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	found, _ := rooms.LoadOrStore(name, &room{})
	joined := found.(*room)
	me := &member{conn: conn}
	joined.mu.Lock()
	joined.members = append(joined.members, me)
	joined.mu.Unlock()
	defer joined.leave(me)
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		framesIn.Add(1)
		for _, peer := range joined.others(me) {
			peer.write.Lock()
			err := peer.conn.WriteMessage(kind, data)
			peer.write.Unlock()
			if err != nil { // a member that left meanwhile
				continue
			}
			framesOut.Add(1)
			deliveries.Add(1)
		}
	}
}

func wsCounters(w http.ResponseWriter, r *http.Request) {
	body := fmt.Sprintf(`{"frames_in":%d,"frames_out":%d,"deliveries":%d}`,
		framesIn.Load(), framesOut.Load(), deliveries.Load())
	writeJSON(w, 200, []byte(body))
}

func addWebSocket(mux *http.ServeMux) {
	mux.HandleFunc("GET /ws/echo", wsEcho)
	mux.HandleFunc("GET /ws/room/", wsRoom)
	mux.HandleFunc("GET /ws/counters", wsCounters)
}
