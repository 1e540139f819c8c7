// Gin reference app (DESIGN.md endpoint contract). Listens on $BENCHLAB_ADDR, release mode,
// no access log; GOMAXPROCS comes from the environment (set to the server cores).
// Database: $BENCHLAB_DB (postgres via pgxpool, mariadb via database/sql), pool size
// $BENCHLAB_POOL_SIZE; Redis via go-redis with the same pool size. Parameters are always bound.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

type reply struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

type user struct {
	ID       int    `json:"id"`
	Username string `json:"username"`
	Role     string `json:"role"`
}

type userReply struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    user   `json:"data"`
}

const (
	pgUser      = "SELECT id, username, role FROM user_basic WHERE username = $1"
	pgUserDelay = "SELECT id, username, role, pg_sleep($1)::text FROM user_basic WHERE username = $2"
	myUser      = "SELECT id, username, role FROM user_basic WHERE username = ?"
	myUserDelay = "SELECT id, username, role, SLEEP(?) FROM user_basic WHERE username = ?"
	maxMs       = 60000
	cacheTTL    = 180 * time.Second
)

var notFound = reply{Code: 404, Message: "not found", Data: map[string]any{}}
var badRequest = reply{Code: 400, Message: "bad request", Data: map[string]any{}}

type backend struct {
	pg    *pgxpool.Pool
	my    *sql.DB
	cache *redis.Client
}

func poolSize() int {
	size, err := strconv.Atoi(os.Getenv("BENCHLAB_POOL_SIZE"))
	if err != nil || size < 1 {
		return 10
	}
	return size
}

func openBackend(ctx context.Context) (*backend, error) {
	b := &backend{}
	size := poolSize()
	switch {
	case os.Getenv("BENCHLAB_DB") == "postgres" && os.Getenv("BENCHLAB_PG_PORT") != "":
		dsn := fmt.Sprintf("host=%s port=%s user=benchlab dbname=benchlab",
			os.Getenv("BENCHLAB_PG_HOST"), os.Getenv("BENCHLAB_PG_PORT"))
		config, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		config.MaxConns = int32(size)
		config.MinConns = int32(size)
		if os.Getenv("BENCHLAB_PGBOUNCER") == "1" {
			// No server-side prepared statements through a transaction-mode pgbouncer.
			config.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		}
		if b.pg, err = pgxpool.NewWithConfig(ctx, config); err != nil {
			return nil, err
		}
	case os.Getenv("BENCHLAB_DB") == "mariadb" && os.Getenv("BENCHLAB_MY_PORT") != "":
		dsn := fmt.Sprintf("benchlab:benchlab@tcp(%s:%s)/benchlab",
			os.Getenv("BENCHLAB_MY_HOST"), os.Getenv("BENCHLAB_MY_PORT"))
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		// database/sql keeps 2 idle connections and opens unlimited ones unless told.
		db.SetMaxOpenConns(size)
		db.SetMaxIdleConns(size)
		b.my = db
	}
	if url := os.Getenv("BENCHLAB_REDIS_URL"); url != "" {
		options, err := redis.ParseURL(url)
		if err != nil {
			return nil, err
		}
		options.PoolSize = size
		b.cache = redis.NewClient(options)
	}
	return b, nil
}

// lookup returns the user, or nil when there is none.
func (b *backend) lookup(ctx context.Context, username string, delay *float64) (*user, error) {
	var u user
	var ignored sql.NullString
	var err error
	switch {
	case b.pg != nil && delay == nil:
		err = b.pg.QueryRow(ctx, pgUser, username).Scan(&u.ID, &u.Username, &u.Role)
	case b.pg != nil:
		err = b.pg.QueryRow(ctx, pgUserDelay, *delay, username).Scan(&u.ID, &u.Username, &u.Role, &ignored)
	case b.my != nil && delay == nil:
		err = b.my.QueryRowContext(ctx, myUser, username).Scan(&u.ID, &u.Username, &u.Role)
	case b.my != nil:
		err = b.my.QueryRowContext(ctx, myUserDelay, *delay, username).Scan(&u.ID, &u.Username, &u.Role, &ignored)
	default:
		return nil, errors.New("no database configured")
	}
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &u, nil
}

func parseMs(value string) (*float64, bool) {
	ms, err := strconv.Atoi(value)
	if err != nil || ms < 0 || ms > maxMs {
		return nil, false
	}
	seconds := float64(ms) / 1000.0
	return &seconds, true
}

func (b *backend) userReply(c *gin.Context, u *user, err error) {
	switch {
	case err != nil:
		c.JSON(http.StatusInternalServerError, reply{Code: 500, Message: err.Error(), Data: map[string]any{}})
	case u == nil:
		c.JSON(http.StatusNotFound, notFound)
	default:
		c.JSON(http.StatusOK, userReply{Code: 0, Message: "ok", Data: *u})
	}
}

func main() {
	gin.SetMode(gin.ReleaseMode) // before the router is created, or gin starts in debug mode
	b, err := openBackend(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	router := gin.New()
	router.Use(gin.Recovery())
	router.GET("/plaintext", func(c *gin.Context) {
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte("Hello, World!"))
	})
	router.GET("/json", func(c *gin.Context) {
		c.JSON(http.StatusOK, reply{Code: 0, Message: "ok", Data: map[string]any{}})
	})
	router.GET("/db", func(c *gin.Context) {
		u, err := b.lookup(c.Request.Context(), c.Query("username"), nil)
		b.userReply(c, u, err)
	})
	router.GET("/db-delay", func(c *gin.Context) {
		delay, ok := parseMs(c.Query("ms"))
		if !ok {
			c.JSON(http.StatusBadRequest, badRequest)
			return
		}
		u, err := b.lookup(c.Request.Context(), c.Query("username"), delay)
		b.userReply(c, u, err)
	})
	router.GET("/cache/:username", func(c *gin.Context) {
		ctx := c.Request.Context()
		key := "user:" + c.Param("username")
		if cached, err := b.cache.Get(ctx, key).Bytes(); err == nil {
			c.Data(http.StatusOK, "application/json; charset=utf-8", cached)
			return
		}
		u, err := b.lookup(ctx, c.Param("username"), nil)
		if err != nil || u == nil {
			b.userReply(c, u, err)
			return
		}
		c.JSON(http.StatusOK, userReply{Code: 0, Message: "ok", Data: *u})
		if body, err := jsonBody(userReply{Code: 0, Message: "ok", Data: *u}); err == nil {
			b.cache.Set(ctx, key, body, cacheTTL)
		}
	})
	router.GET("/sleep", func(c *gin.Context) {
		delay, ok := parseMs(c.Query("ms"))
		if !ok {
			c.JSON(http.StatusBadRequest, badRequest)
			return
		}
		time.Sleep(time.Duration(*delay * float64(time.Second)))
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte("ok"))
	})
	addr := os.Getenv("BENCHLAB_ADDR")
	if addr == "" {
		log.Fatal("BENCHLAB_ADDR is not set")
	}
	log.Fatal(router.Run(addr))
}
