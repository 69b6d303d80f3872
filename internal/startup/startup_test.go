package startup

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDo: a phase that answers gives its result; one that never answers ends with a
// *TimeoutError naming it and its fix once the bound passes; one cut by its context ends with the
// context's cause. The phase that never answers is unblocked when the test ends.
func TestDo(t *testing.T) {
	t.Setenv(EnvTimeout, "50ms")
	never := make(chan struct{})
	defer close(never)
	hang := func() (int, error) { <-never; return 0, nil }

	if v, err := Do(context.Background(), "policy", "policy file f", "fix it", func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("answering phase: got %d, %v", v, err)
	}
	_, err := Do(context.Background(), "policy", "policy file f", "give a local file", hang)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != "policy" || err.Error() != "policy: policy file f did not answer within 50ms; fix: give a local file" {
		t.Errorf("hung phase: got %v", err)
	}
	t.Setenv(EnvTimeout, "10m") // only the context can end it now
	why := errors.New("SIGTERM received")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel(why) }()
	if _, err := Do(ctx, "audit store", "audit store s", "fix", hang); !errors.Is(err, why) {
		t.Errorf("canceled phase: got %v, want the cause", err)
	}
	if err := Begin(ctx, "driver"); !errors.Is(err, why) {
		t.Errorf("Begin after the end: got %v, want the cause", err)
	}
}

// TestTimeout: EnvTimeout when it is a positive duration, else the default.
func TestTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"": DefaultTimeout, "4s": 4 * time.Second, "junk": DefaultTimeout, "-1s": DefaultTimeout, "0": DefaultTimeout} {
		t.Setenv(EnvTimeout, v)
		if got := Timeout(); got != want {
			t.Errorf("%s=%q: got %s, want %s", EnvTimeout, v, got, want)
		}
	}
}
