// Package redisstate is the state.Store on Redis, for the scaled-out mode:
// any gateway or worker sees the same accounts, usage and progress.
// Compound operations run as Lua scripts so they stay atomic across processes.
package redisstate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/docrender/docrender/pkg/state"
)

// Store is a state.Store on Redis. Every key is prefixed, so several
// deployments (or test runs) can share a server.
type Store struct {
	rdb    *redis.Client
	prefix string
}

// Open connects to url (redis://host:port/db) and checks the connection.
func Open(ctx context.Context, url, prefix string) (*Store, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstate: %w", err)
	}
	s := &Store{rdb: redis.NewClient(opt), prefix: prefix}
	if err := s.Ready(ctx); err != nil {
		s.rdb.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) k(key string) string { return s.prefix + key }

func (s *Store) Close() error { return s.rdb.Close() }

func (s *Store) Ready(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstate: ping: %w", err)
	}
	return nil
}

func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstate: %s %s: %w", op, key, state.ErrNotFound)
	}
	if unreachable(err) {
		return fmt.Errorf("redisstate: %s %s: %w: %w", op, key, state.ErrUnavailable, err)
	}
	return fmt.Errorf("redisstate: %s %s: %w", op, key, err)
}

// unreachable tells a Redis that cannot answer now (down, restarting,
// still loading its AOF) from a failed command.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, redis.ErrClosed) || strings.HasPrefix(err.Error(), "LOADING")
}

func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.rdb.Get(ctx, s.k(key)).Bytes()
	return v, wrap("get", key, err)
}

func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return wrap("set", key, s.rdb.Set(ctx, s.k(key), value, ttl).Err())
}

func (s *Store) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.k(key), value, ttl).Result()
	return ok, wrap("setnx", key, err)
}

// swapScript sets (ARGV[2] with a ttl of ARGV[3] ms, 0: none) or, when
// ARGV[4] is "del", deletes KEYS[1] while it holds ARGV[1].
var swapScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[4] == 'del' then
  redis.call('DEL', KEYS[1])
elseif tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1`)

func (s *Store) Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (bool, error) {
	op := "set"
	if value == nil {
		op = "del"
	}
	n, err := swapScript.Run(ctx, s.rdb, []string{s.k(key)}, old, value, ttlMillis(ttl), op).Int64()
	return n == 1, wrap("swap", key, err)
}

func (s *Store) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = s.k(k)
	}
	return wrap("delete", fmt.Sprint(keys), s.rdb.Del(ctx, ks...).Err())
}

func ttlMillis(ttl time.Duration) int64 { return ttl.Milliseconds() }

// incrScript sets the ttl only when the key is created, like the bbolt store.
var incrScript = redis.NewScript(`
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if v == tonumber(ARGV[1]) and tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v`)

func (s *Store) IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	v, err := incrScript.Run(ctx, s.rdb, []string{s.k(key)}, delta, ttlMillis(ttl)).Int64()
	return v, wrap("incr", key, err)
}

// chargeKey is the record of one charge: a hash of n (taken), r (given
// back so far) and one p:<part> field per part given back.
func chargeKey(counter, charge string) string { return counter + "#charge:" + charge }

// reserveScript takes the charge and, when KEYS[3] is given, adds the hold
// ARGV[6] with score ARGV[5] to that sorted set whenever the charge holds.
var reserveScript = redis.NewScript(`
local function hold()
  if KEYS[3] then redis.call('ZADD', KEYS[3], ARGV[5], ARGV[6]) end
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  hold()
  return {tonumber(redis.call('GET', KEYS[1]) or '0'), 1}
end
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if cur + n > tonumber(ARGV[2]) then return {cur, 0} end
local v = redis.call('INCRBY', KEYS[1], n)
if tonumber(ARGV[3]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
redis.call('HSET', KEYS[2], 'n', n, 'r', 0)
redis.call('PEXPIRE', KEYS[2], ARGV[4])
hold()
return {v, 1}`)

func (s *Store) Reserve(ctx context.Context, key, charge string, n, limit int64, ttl, chargeTTL time.Duration, hold *state.Hold) (int64, bool, error) {
	keys := []string{s.k(key), s.k(chargeKey(key, charge))}
	args := []any{n, limit, ttlMillis(ttl), max(ttlMillis(chargeTTL), 1)}
	if hold != nil {
		keys = append(keys, s.k(hold.Index))
		args = append(args, fmtScore(hold.Score), hold.Member)
	}
	res, err := reserveScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return 0, false, wrap("reserve", key, err)
	}
	return res[0], res[1] == 1, nil
}

// refundScript never creates the counter: giving back to a month whose
// counter expired would leave a negative count behind.
var refundScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
if n <= 0 or redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[2], 'p:' .. ARGV[1], 1) == 0 then return 0 end
local m = math.min(tonumber(ARGV[2]), n - tonumber(redis.call('HGET', KEYS[2], 'r') or '0'))
if m <= 0 then return 0 end
redis.call('HINCRBY', KEYS[2], 'r', m)
redis.call('DECRBY', KEYS[1], m)
return m`)

func (s *Store) Refund(ctx context.Context, key, charge, part string, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	keys := []string{s.k(key), s.k(chargeKey(key, charge))}
	v, err := refundScript.Run(ctx, s.rdb, keys, part, n).Int64()
	return v, wrap("refund", key, err)
}

func (s *Store) IndexAdd(ctx context.Context, index, member string, score float64) error {
	return wrap("zadd", index, s.rdb.ZAdd(ctx, s.k(index), redis.Z{Score: score, Member: member}).Err())
}

var addIfBelowScript = redis.NewScript(`
if redis.call('ZCOUNT', KEYS[1], ARGV[3], '+inf') >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1`)

func (s *Store) IndexAddIfBelow(ctx context.Context, index, member string, score, floor float64, limit int64) (bool, error) {
	v, err := addIfBelowScript.Run(ctx, s.rdb, []string{s.k(index)}, member, fmtScore(score), fmtScore(floor), limit).Int64()
	return v == 1, wrap("zadd if below", index, err)
}

func (s *Store) IndexRemove(ctx context.Context, index, member string) (bool, error) {
	n, err := s.rdb.ZRem(ctx, s.k(index), member).Result()
	return n > 0, wrap("zrem", index, err)
}

func fmtScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func (s *Store) IndexRange(ctx context.Context, index string, min, max float64, offset, count int, desc bool) ([]string, error) {
	args := redis.ZRangeArgs{Key: s.k(index), Start: fmtScore(min), Stop: fmtScore(max), ByScore: true, Rev: desc,
		Offset: int64(offset), Count: int64(count)}
	if desc {
		// With REV the range is given from the high end.
		args.Start, args.Stop = fmtScore(max), fmtScore(min)
	}
	if count < 0 && offset == 0 {
		args.Offset, args.Count = 0, 0
	}
	out, err := s.rdb.ZRangeArgs(ctx, args).Result()
	if out == nil {
		out = []string{}
	}
	return out, wrap("zrange", index, err)
}

func (s *Store) IndexCount(ctx context.Context, index string, min, max float64) (int64, error) {
	n, err := s.rdb.ZCount(ctx, s.k(index), fmtScore(min), fmtScore(max)).Result()
	return n, wrap("zcount", index, err)
}

var setAddScript = redis.NewScript(`
local added = redis.call('SADD', KEYS[1], ARGV[1])
if added == 1 and tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {added, redis.call('SCARD', KEYS[1])}`)

func (s *Store) SetAdd(ctx context.Context, key, member string, ttl time.Duration) (bool, int64, error) {
	res, err := setAddScript.Run(ctx, s.rdb, []string{s.k(key)}, member, ttlMillis(ttl)).Int64Slice()
	if err != nil {
		return false, 0, wrap("sadd", key, err)
	}
	return res[0] == 1, res[1], nil
}

func (s *Store) SetCard(ctx context.Context, key string) (int64, error) {
	n, err := s.rdb.SCard(ctx, s.k(key)).Result()
	return n, wrap("scard", key, err)
}

var _ state.Store = (*Store)(nil)
