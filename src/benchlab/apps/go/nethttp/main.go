// Go net/http reference app (DESIGN.md endpoint contract): the standard library only, over
// the same backend package as the Gin app. Listens on $BENCHLAB_ADDR; GOMAXPROCS from the
// environment.
package main

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"strings"

	"benchlab/apps/go/backend"
)

func write(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	write(w, status, "application/json", body)
}

func main() {
	b, err := backend.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	badBody, _ := json.Marshal(backend.BadRequest)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /plaintext", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, "text/plain; charset=utf-8", []byte("Hello, World!"))
	})
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(backend.OK) // serialised per request, as the other stacks do
		writeJSON(w, 200, body)
	})
	mux.HandleFunc("GET /db", func(w http.ResponseWriter, r *http.Request) {
		status, body := backend.UserReply(b.Lookup(r.Context(), r.URL.Query().Get("username"), nil))
		writeJSON(w, status, body)
	})
	mux.HandleFunc("GET /db-delay", func(w http.ResponseWriter, r *http.Request) {
		delay, ok := backend.ParseMs(r.URL.Query().Get("ms"))
		if !ok {
			writeJSON(w, 400, badBody)
			return
		}
		status, body := backend.UserReply(b.Lookup(r.Context(), r.URL.Query().Get("username"), delay))
		writeJSON(w, status, body)
	})
	mux.HandleFunc("GET /cache/", func(w http.ResponseWriter, r *http.Request) {
		status, body := b.CachedUser(r.Context(), strings.TrimPrefix(r.URL.Path, "/cache/"))
		writeJSON(w, status, body)
	})
	mux.HandleFunc("GET /sleep", func(w http.ResponseWriter, r *http.Request) {
		delay, ok := backend.ParseMs(r.URL.Query().Get("ms"))
		if !ok {
			writeJSON(w, 400, badBody)
			return
		}
		backend.Sleep(*delay)
		write(w, 200, "text/plain; charset=utf-8", []byte("ok"))
	})
	mux.HandleFunc("GET /cpu", func(w http.ResponseWriter, r *http.Request) {
		us, ok := backend.ParseUs(r.URL.Query().Get("us"))
		if !ok {
			writeJSON(w, 400, badBody)
			return
		}
		backend.BurnCPU(us)
		write(w, 200, "text/plain; charset=utf-8", []byte("ok"))
	})
	addWebSocket(mux)
	addr := os.Getenv("BENCHLAB_ADDR")
	if addr == "" {
		log.Fatal("BENCHLAB_ADDR is not set")
	}
	// TLS when benchlab gives a certificate: net/http then offers h2 and http/1.1 by ALPN.
	if cert := os.Getenv("BENCHLAB_TLS_CERT"); cert != "" {
		log.Fatal(http.ListenAndServeTLS(addr, cert, os.Getenv("BENCHLAB_TLS_KEY"), mux))
	}
	log.Fatal(http.ListenAndServe(addr, mux))
}
