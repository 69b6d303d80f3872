package bridge

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// The browser is verified while the page is set up (launch runs both at once). A browser that
// fails the check must still be refused, and closed, however late the check answers: the session
// is never handed out, and no page of that browser is ever opened.
func TestLaunchRefusesBrowserFailingVerification(t *testing.T) {
	for _, delay := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			var checked *Session
			verifyLaunched = func(s *Session, ctx context.Context) error {
				checked = s
				time.Sleep(delay) // answer after the page is set up
				return errors.New("browser-agent test: " + ErrNotLaunched.Error())
			}
			t.Cleanup(func() { verifyLaunched = (*Session).verifyBrowser })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := testRT.Launch(ctx, testFix.pol)
			if err == nil {
				_ = s.Close()
				t.Fatal("Launch handed out a session whose browser failed verification")
			}
			if s != nil {
				t.Fatalf("Launch returned a session with the error %v", err)
			}
			if checked == nil {
				t.Fatal("the browser was never verified")
			}
			if checked.life.ctx.Err() == nil {
				t.Fatal("the refused session was not closed")
			}
			if _, err := os.Stat(checked.proc.profile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the refused session's profile %s is still there: %v", checked.proc.profile, err)
			}
		})
	}
}
