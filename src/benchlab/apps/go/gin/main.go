// Gin reference app (DESIGN.md endpoint contract). Listens on $BENCHLAB_ADDR (over TLS with
// $BENCHLAB_TLS_CERT and _KEY, h2c with $BENCHLAB_H2C=1), release mode,
// no access log; GOMAXPROCS comes from the environment (set to the server's worker count).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"io"
	"log"
	"mime"
	"net/http"
	"os"

	"benchlab/apps/go/backend"
	"github.com/gin-contrib/gzip"
	"github.com/gin-gonic/gin"
)

const jsonType = "application/json; charset=utf-8"

// fortunesHTML is TechEmpower's fortunes page; html/template escapes the messages.
const fortunesHTML = `<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}</table></body></html>`

// Digest is the upload scenario's answer.
type Digest struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func main() {
	gin.SetMode(gin.ReleaseMode) // before the router is created, or gin starts in debug mode
	b, err := backend.Open(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	router := gin.New()
	router.Use(gin.Recovery())
	router.GET("/plaintext", func(c *gin.Context) {
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte("Hello, World!"))
	})
	router.GET("/json", func(c *gin.Context) {
		c.JSON(http.StatusOK, backend.OK)
	})
	router.GET("/db", func(c *gin.Context) {
		status, body := backend.UserReply(b.Lookup(c.Request.Context(), c.Query("username"), nil))
		c.Data(status, jsonType, body)
	})
	router.GET("/db-delay", func(c *gin.Context) {
		delay, ok := backend.ParseMs(c.Query("ms"))
		if !ok {
			c.JSON(http.StatusBadRequest, backend.BadRequest)
			return
		}
		status, body := backend.UserReply(b.Lookup(c.Request.Context(), c.Query("username"), delay))
		c.Data(status, jsonType, body)
	})
	router.GET("/cache/:username", func(c *gin.Context) {
		status, body := b.CachedUser(c.Request.Context(), c.Param("username"))
		c.Data(status, jsonType, body)
	})
	router.GET("/sleep", func(c *gin.Context) {
		delay, ok := backend.ParseMs(c.Query("ms"))
		if !ok {
			c.JSON(http.StatusBadRequest, backend.BadRequest)
			return
		}
		backend.Sleep(*delay)
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte("ok"))
	})
	router.GET("/cpu", func(c *gin.Context) {
		us, ok := backend.ParseUs(c.Query("us"))
		if !ok {
			c.JSON(http.StatusBadRequest, backend.BadRequest)
			return
		}
		backend.BurnCPU(us)
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte("ok"))
	})
	router.SetHTMLTemplate(template.Must(template.New("fortunes").Parse(fortunesHTML)))
	router.GET("/fortunes", func(c *gin.Context) {
		fortunes, err := b.Fortunes(c.Request.Context())
		if err != nil {
			c.JSON(http.StatusInternalServerError, backend.Failure(err))
			return
		}
		c.HTML(http.StatusOK, "fortunes", fortunes)
	})
	router.GET("/queries", func(c *gin.Context) {
		worlds, err := b.RandomWorlds(c.Request.Context(), backend.ParseCount(c.Query("n")))
		if err != nil {
			c.JSON(http.StatusInternalServerError, backend.Failure(err))
			return
		}
		c.JSON(http.StatusOK, worlds)
	})
	router.GET("/updates", func(c *gin.Context) {
		worlds, err := b.UpdateWorlds(c.Request.Context(), backend.ParseCount(c.Query("n")))
		if err != nil {
			c.JSON(http.StatusInternalServerError, backend.Failure(err))
			return
		}
		c.JSON(http.StatusOK, worlds)
	})
	if dir := os.Getenv("BENCHLAB_STATIC_DIR"); dir != "" {
		// Go's own table has no .bin: without this the type would come from /etc/mime.types
		// or from sniffing the bytes, depending on the machine.
		if err := mime.AddExtensionType(".bin", "application/octet-stream"); err != nil {
			log.Fatal(err)
		}
		router.Static("/static", dir)
	}
	router.POST("/upload", func(c *gin.Context) {
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.JSON(http.StatusBadRequest, backend.BadRequest)
			return
		}
		sum := sha256.Sum256(body)
		c.JSON(http.StatusOK, Digest{Bytes: len(body), SHA256: hex.EncodeToString(sum[:])})
	})
	document := backend.GzipDocument()
	router.GET("/gzip/json", gzip.Gzip(gzip.DefaultCompression), func(c *gin.Context) {
		c.JSON(http.StatusOK, document)
	})
	addr := os.Getenv("BENCHLAB_ADDR")
	if addr == "" {
		log.Fatal("BENCHLAB_ADDR is not set")
	}
	// TLS when benchlab gives a certificate (net/http then offers h2 and http/1.1 by ALPN);
	// HTTP/2 without TLS (h2c, prior knowledge) when asked: gin's own switch.
	if cert := os.Getenv("BENCHLAB_TLS_CERT"); cert != "" {
		log.Fatal(router.RunTLS(addr, cert, os.Getenv("BENCHLAB_TLS_KEY")))
	}
	router.UseH2C = os.Getenv("BENCHLAB_H2C") == "1"
	log.Fatal(router.Run(addr))
}
