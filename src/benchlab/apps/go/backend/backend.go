// Package backend is the data layer both Go stacks share, so they run the same queries:
// PostgreSQL through pgxpool, MariaDB through database/sql, Redis through go-redis, with the
// pool size of $BENCHLAB_POOL_SIZE. Parameters are always bound.
package backend

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

const (
	pgUser      = "SELECT id, username, role FROM user_basic WHERE username = $1"
	pgUserDelay = "SELECT id, username, role, pg_sleep($1)::text FROM user_basic WHERE username = $2"
	myUser      = "SELECT id, username, role FROM user_basic WHERE username = ?"
	myUserDelay = "SELECT id, username, role, SLEEP(?) FROM user_basic WHERE username = ?"
	maxMs       = 60000
	cacheTTL    = 180 * time.Second

	pgFortunes    = "SELECT id, message FROM fortune"
	pgWorld       = "SELECT id, randomnumber FROM world WHERE id = $1"
	pgWorldUpdate = "UPDATE world SET randomnumber = $1 WHERE id = $2"
	worldCount    = 10000
	maxCount      = 500
	gzipItems     = 100
)

var roles = [...]string{"member", "editor", "viewer", "admin"}

// Reply is the contract's envelope; Data is a user or an empty object.
type Reply struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// User is one row of user_basic.
type User struct {
	ID       int    `json:"id"`
	Username string `json:"username"`
	Role     string `json:"role"`
}

// World is one row of world.
type World struct {
	ID           int `json:"id"`
	RandomNumber int `json:"randomNumber"`
}

// Fortune is one row of fortune.
type Fortune struct {
	ID      int
	Message string
}

var errNoPostgres = errors.New("no PostgreSQL configured")

var (
	OK         = Reply{Code: 0, Message: "ok", Data: map[string]any{}}
	NotFound   = Reply{Code: 404, Message: "not found", Data: map[string]any{}}
	BadRequest = Reply{Code: 400, Message: "bad request", Data: map[string]any{}}
)

// Backend holds the pools of one server process.
type Backend struct {
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

// pgDSN is PostgreSQL's (or pgbouncer's) URL from $BENCHLAB_PG_HOST/PORT/PASSWORD; the
// password is escaped by net/url.
func pgDSN() string {
	address := url.URL{
		Scheme: "postgres",
		User:   url.UserPassword("benchlab", os.Getenv("BENCHLAB_PG_PASSWORD")),
		Host:   net.JoinHostPort(os.Getenv("BENCHLAB_PG_HOST"), os.Getenv("BENCHLAB_PG_PORT")),
		Path:   "/benchlab",
	}
	return address.String()
}

// myDSN is MariaDB's DSN from $BENCHLAB_MY_HOST/PORT/PASSWORD.
func myDSN() string {
	config := mysql.NewConfig()
	config.User = "benchlab"
	config.Passwd = os.Getenv("BENCHLAB_MY_PASSWORD")
	config.Net = "tcp"
	config.Addr = net.JoinHostPort(os.Getenv("BENCHLAB_MY_HOST"), os.Getenv("BENCHLAB_MY_PORT"))
	config.DBName = "benchlab"
	return config.FormatDSN()
}

// Open connects to what the environment names; nothing when no service is configured.
func Open(ctx context.Context) (*Backend, error) {
	b := &Backend{}
	size := poolSize()
	switch {
	case os.Getenv("BENCHLAB_DB") == "postgres" && os.Getenv("BENCHLAB_PG_PORT") != "":
		config, err := pgxpool.ParseConfig(pgDSN())
		if err != nil {
			return nil, err
		}
		// The pool grows on demand up to its size, as the Python stacks' do: the sessions
		// the database sees are the ones the load needed.
		config.MaxConns = int32(size)
		config.MinConns = 1
		if os.Getenv("BENCHLAB_PGBOUNCER") == "1" {
			// No server-side prepared statements through a transaction-mode pgbouncer.
			config.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		}
		if b.pg, err = pgxpool.NewWithConfig(ctx, config); err != nil {
			return nil, err
		}
	case os.Getenv("BENCHLAB_DB") == "mariadb" && os.Getenv("BENCHLAB_MY_PORT") != "":
		db, err := sql.Open("mysql", myDSN())
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

// ParseMs reads the ms query parameter as seconds.
func ParseMs(value string) (*float64, bool) {
	ms, err := strconv.Atoi(value)
	if err != nil || ms < 0 || ms > maxMs {
		return nil, false
	}
	seconds := float64(ms) / 1000.0
	return &seconds, true
}

// Lookup returns the user, or nil when there is none.
func (b *Backend) Lookup(ctx context.Context, username string, delay *float64) (*User, error) {
	var u User
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

// UserReply answers a lookup: status and JSON body.
func UserReply(u *User, err error) (int, []byte) {
	switch {
	case err != nil:
		body, _ := json.Marshal(Reply{Code: 500, Message: err.Error(), Data: map[string]any{}})
		return 500, body
	case u == nil:
		body, _ := json.Marshal(NotFound)
		return 404, body
	default:
		body, _ := json.Marshal(Reply{Code: 0, Message: "ok", Data: *u})
		return 200, body
	}
}

// CachedUser is cache-aside: Redis GET, on a miss the query, then SET with a 180 s TTL.
func (b *Backend) CachedUser(ctx context.Context, username string) (int, []byte) {
	key := "user:" + username
	if cached, err := b.cache.Get(ctx, key).Bytes(); err == nil {
		return 200, cached
	}
	u, err := b.Lookup(ctx, username, nil)
	status, body := UserReply(u, err)
	if status == 200 {
		b.cache.Set(ctx, key, body, cacheTTL)
	}
	return status, body
}

// ParseUs reads the microseconds of CPU the cpu scenario burns.
func ParseUs(value string) (int, bool) {
	us, err := strconv.Atoi(value)
	if err != nil || us < 0 || us > 1000000 {
		return 0, false
	}
	return us, true
}

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var usage syscall.Rusage
	_ = syscall.Getrusage(1, &usage) // 1: RUSAGE_THREAD
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// BurnCPU spends `us` microseconds of CPU time (not wall time) on this goroutine's thread:
// the cpu scenario's known cost per request.
func BurnCPU(us int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	end := threadCPU() + time.Duration(us)*time.Microsecond
	for threadCPU() < end {
	}
}

// Sleep waits without holding a CPU.
func Sleep(seconds float64) {
	time.Sleep(time.Duration(seconds * float64(time.Second)))
}

// Failure is the envelope of a 500.
func Failure(err error) Reply {
	return Reply{Code: 500, Message: err.Error(), Data: map[string]any{}}
}

// GzipDocument is the json-gzip scenario's answer: user_basic rows 1 … 100, as seeded.
func GzipDocument() Reply {
	users := make([]User, gzipItems)
	for i := range users {
		id := i + 1
		users[i] = User{ID: id, Username: fmt.Sprintf("user%05d", id), Role: roles[id%len(roles)]}
	}
	return Reply{Code: 0, Message: "ok", Data: users}
}

// ParseCount reads the n of queries and updates as TechEmpower does: 1 when missing or not
// a number, clamped to 1 … 500.
func ParseCount(value string) int {
	n, err := strconv.Atoi(value)
	if err != nil {
		return 1
	}
	return min(max(n, 1), maxCount)
}

// Fortunes returns every row of fortune plus the one added at request time, sorted by message.
func (b *Backend) Fortunes(ctx context.Context) ([]Fortune, error) {
	if b.pg == nil {
		return nil, errNoPostgres
	}
	rows, err := b.pg.Query(ctx, pgFortunes)
	if err != nil {
		return nil, err
	}
	fortunes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Fortune, error) {
		var f Fortune
		err := row.Scan(&f.ID, &f.Message)
		return f, err
	})
	if err != nil {
		return nil, err
	}
	fortunes = append(fortunes, Fortune{ID: 0, Message: "Additional fortune added at request time."})
	slices.SortFunc(fortunes, func(a, b Fortune) int { return strings.Compare(a.Message, b.Message) })
	return fortunes, nil
}

// readWorlds reads the rows of ids, each by its own query on its own goroutine.
func (b *Backend) readWorlds(ctx context.Context, ids []int) ([]World, error) {
	worlds := make([]World, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			errs[i] = b.pg.QueryRow(ctx, pgWorld, id).Scan(&worlds[i].ID, &worlds[i].RandomNumber)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return worlds, nil
}

// RandomWorlds reads n random rows of world (repeats allowed).
func (b *Backend) RandomWorlds(ctx context.Context, n int) ([]World, error) {
	if b.pg == nil {
		return nil, errNoPostgres
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = rand.IntN(worldCount) + 1
	}
	return b.readWorlds(ctx, ids)
}

// UpdateWorlds reads n distinct random rows of world, gives each a new random number and
// writes them back in one transaction. The ids are sorted so that concurrent requests lock
// rows in the same order and cannot deadlock.
func (b *Backend) UpdateWorlds(ctx context.Context, n int) ([]World, error) {
	if b.pg == nil {
		return nil, errNoPostgres
	}
	seen := make(map[int]bool, n)
	ids := make([]int, 0, n)
	for len(ids) < n {
		if id := rand.IntN(worldCount) + 1; !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	worlds, err := b.readWorlds(ctx, ids)
	if err != nil {
		return nil, err
	}
	batch := &pgx.Batch{}
	for i := range worlds {
		worlds[i].RandomNumber = rand.IntN(worldCount) + 1
		batch.Queue(pgWorldUpdate, worlds[i].RandomNumber, worlds[i].ID)
	}
	err = pgx.BeginFunc(ctx, b.pg, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, err
	}
	return worlds, nil
}
