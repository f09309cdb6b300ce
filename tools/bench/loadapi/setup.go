package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
)

// backendPIDs returns the server processes of the connections to dbName (the API's pool), whose
// CPU is part of what a request costs; nil when they cannot be listed.
func backendPIDs(ctx context.Context, serverURL, dbName string) []int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, dbName)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil
	}
	return pids
}

// seedEndpoints creates n endpoints through the API so the list has realistic content, and
// returns the list's first page exactly as the API answers it (the bare server's body).
func seedEndpoints(ctx context.Context, listURL, key string, n int) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for i := 1; i <= n; i++ {
		body, _ := json.Marshal(map[string]string{
			"url":         fmt.Sprintf("https://example.com/hook/%d", i),
			"description": fmt.Sprintf("load test endpoint %d", i),
		})
		status, resp, err := call(ctx, client, http.MethodPost, listURL, key, body)
		if err != nil {
			return nil, fmt.Errorf("create endpoint: %w", err)
		}
		if status != http.StatusCreated {
			return nil, fmt.Errorf("create endpoint: status %d: %s", status, resp)
		}
	}
	status, page, err := call(ctx, client, http.MethodGet, listURL, key, nil)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	var parsed struct {
		Data []json.RawMessage `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal(page, &parsed) != nil || len(parsed.Data) != min(n, 20) {
		return nil, fmt.Errorf("list endpoints: want %d items, got status %d: %.300s", min(n, 20), status, page)
	}
	return page, nil
}

func call(ctx context.Context, client *http.Client, method, u, key string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
