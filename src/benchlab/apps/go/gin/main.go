// Gin reference app (DESIGN.md endpoint contract). Listens on $BENCHLAB_ADDR, release mode,
// no access log; GOMAXPROCS comes from the environment (set to the server's worker count).
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"benchlab/apps/go/backend"
	"github.com/gin-gonic/gin"
)

const jsonType = "application/json; charset=utf-8"

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
	addr := os.Getenv("BENCHLAB_ADDR")
	if addr == "" {
		log.Fatal("BENCHLAB_ADDR is not set")
	}
	log.Fatal(router.Run(addr))
}
