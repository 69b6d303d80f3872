package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/coder/websocket"
)

// cdpConn is the guard's own DevTools connection to the browser it launched, over the launch's
// unix socket: how it checks the browser and reads pages in a world of its own.
type cdpConn struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	next    int64
	pending map[int64]chan cdpReply
	closed  chan struct{}
	err     error
	// worlds are the execution contexts each session reported (Runtime.enable), by session.
	worlds map[string][]execContext
}

// execContext is one execution context a session reported: its id, name and frame.
type execContext struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	AuxData struct {
		FrameID string `json:"frameId"`
	} `json:"auxData"`
}

// event keeps the execution contexts a session reports.
func (c *cdpConn) event(b []byte) {
	var e struct {
		Method  string `json:"method"`
		Session string `json:"sessionId"`
		Params  struct {
			Context execContext `json:"context"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &e) != nil || e.Method != "Runtime.executionContextCreated" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.worlds == nil {
		c.worlds = map[string][]execContext{}
	}
	c.worlds[e.Session] = append(c.worlds[e.Session], e.Params.Context)
}

// contexts are the execution contexts session reported, forgotten here.
func (c *cdpConn) contexts(session string) []execContext {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.worlds[session]
	delete(c.worlds, session)
	return out
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// unixHTTP is an HTTP client whose every connection goes to the unix socket at socket.
func unixHTTP(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// dialCDP connects to the browser's DevTools path over socket.
func dialCDP(ctx context.Context, socket, path string) (*cdpConn, error) {
	ws, _, err := websocket.Dial(ctx, "ws://localhost"+path, &websocket.DialOptions{HTTPClient: unixHTTP(socket)})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	c := &cdpConn{ws: ws, pending: map[int64]chan cdpReply{}, closed: make(chan struct{})}
	go c.read()
	return c, nil
}

func (c *cdpConn) read() {
	for {
		_, b, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			close(c.closed)
			return
		}
		var m struct {
			ID int64 `json:"id"`
			cdpReply
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		if m.ID == 0 {
			c.event(b) // the guard listens only for the worlds a session reports
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends method (to the target of session, "" for the browser) and decodes its result.
func (c *cdpConn) call(ctx context.Context, session, method string, params, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err == nil {
		err = c.ws.Write(ctx, websocket.MessageText, b)
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-c.closed:
		return fmt.Errorf("%s: the DevTools connection closed: %w", method, c.err)
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *cdpConn) Close() error {
	if c == nil {
		return nil
	}
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
