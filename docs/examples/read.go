// Read a mufold packet from Redis with go-redis, by identity or by scope.
//
//	go run . mur_<64 hex digits>
//	go run . AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]
//
// REDIS_URL (default redis://127.0.0.1:6379) and MUFOLD_PREFIX (default mufold)
// say where. Prints the packet, canonical JSON on one line, exactly the bytes
// the reducer made. Exits 2 for a usage error (an identity is mur_ and 64
// lowercase hex digits) or when nothing has been folded under the prefix yet,
// as `mufold read` does, and 3 when there is no packet for the identity. Needs only the reader ACL role
// (HGET, FCALL_RO). Built, vetted and run by
// test/integration/readback-snippets.int.spec.ts.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The ten parts of an identity, in the order mufold_read_v1 takes them (IDENTITY_PARTS in src/fold/stored-names.ts).
var parts = []string{"m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p"}

var identityPattern = regexp.MustCompile(`^mur_[0-9a-f]{64}$`)

const (
	exitUsage        = 2
	exitUnknown      = 3
	exitNoGeneration = 2
)

// errNoGeneration: nothing has been folded under the prefix yet.
var errNoGeneration = errors.New("no mufold generation")

// canonicalJSON writes maps with sorted keys and no spaces, without HTML escaping (as Python's json.dumps).
func canonicalJSON(value any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// identity is the reducer identity (mur_…): sha256 of the canonical JSON of the context.
func identity(agent, project, corpus, surface, retrieval, policy, reducerVersion string) (string, error) {
	text, err := canonicalJSON(map[string]any{
		"schema_version":         "memory_utility_projection_v0",
		"scope":                  map[string]string{"agent_id": agent, "project_id": project, "corpus_id": corpus, "surface_id": surface},
		"retrieval_snapshot_ref": retrieval,
		"policy_snapshot_ref":    policy,
		"reducer_version":        reducerVersion,
	})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	return "mur_" + hex.EncodeToString(sum[:]), nil
}

// readPacket returns the packet in the live generation, or redis.Nil when there is none.
func readPacket(ctx context.Context, rdb *redis.Client, prefix, ident string) (string, error) {
	generation, err := rdb.HGet(ctx, prefix+":control", "generation").Result()
	if errors.Is(err, redis.Nil) {
		return "", errNoGeneration
	} else if err != nil {
		return "", err
	}
	if _, err := strconv.Atoi(generation); err != nil {
		return "", fmt.Errorf("bad generation %q", generation)
	}
	keys := make([]string, len(parts))
	for i, part := range parts {
		keys[i] = fmt.Sprintf("%s:g%s:{%s}:%s", prefix, generation, ident, part)
	}
	return rdb.FCallRO(ctx, "mufold_read_v1", keys).Text()
}

func getenv(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

func run(args []string) int {
	var ident string
	var err error
	switch len(args) {
	case 1:
		ident = args[0]
		if !identityPattern.MatchString(ident) {
			fmt.Fprintf(os.Stderr, "invalid identity %q: must be mur_ followed by 64 lowercase hex digits\n", ident)
			return exitUsage
		}
	case 6, 7:
		version := "memory_utility_reducer_v0"
		if len(args) == 7 {
			version = args[6]
		}
		if ident, err = identity(args[0], args[1], args[2], args[3], args[4], args[5], version); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: read mur_… | AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]")
		return exitUsage
	}
	opts, err := redis.ParseURL(getenv("REDIS_URL", "redis://127.0.0.1:6379"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitUsage
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	prefix := getenv("MUFOLD_PREFIX", "mufold")
	packet, err := readPacket(context.Background(), rdb, prefix, ident)
	if errors.Is(err, errNoGeneration) {
		fmt.Fprintf(os.Stderr, "no mufold generation in Redis under prefix %s: nothing has been folded yet\n", prefix)
		return exitNoGeneration
	} else if errors.Is(err, redis.Nil) {
		fmt.Fprintf(os.Stderr, "no projection for identity %s\n", ident)
		return exitUnknown
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(packet)
	return 0
}

func main() {
	os.Exit(run(os.Args[1:]))
}
