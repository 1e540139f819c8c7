// Gin reference app (DESIGN.md endpoint contract). Listens on $BENCHLAB_ADDR, release mode,
// no access log; GOMAXPROCS comes from the environment (set to the server cores).
package main

import (
	"log"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"
)

type reply struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

func main() {
	gin.SetMode(gin.ReleaseMode) // before the router is created, or gin starts in debug mode
	router := gin.New()
	router.Use(gin.Recovery())
	router.GET("/plaintext", func(c *gin.Context) {
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte("Hello, World!"))
	})
	router.GET("/json", func(c *gin.Context) {
		c.JSON(http.StatusOK, reply{Code: 0, Message: "ok", Data: map[string]any{}})
	})
	addr := os.Getenv("BENCHLAB_ADDR")
	if addr == "" {
		log.Fatal("BENCHLAB_ADDR is not set")
	}
	log.Fatal(router.Run(addr))
}
