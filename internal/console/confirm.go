package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
)

// Confirm asks question on errw and reads one answer line from in; only y
// or yes approves (an input that ends does not, nor a nil in, nor an
// interrupt, which does not wait for the line: the reader is left to the
// exit).
func Confirm(ctx context.Context, in io.Reader, errw io.Writer, question string) bool {
	fmt.Fprint(errw, question)
	if in == nil {
		return false
	}
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(in).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(errw)
		return false
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	}
}
