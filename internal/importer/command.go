package importer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Options are what `dsh-host import` was asked to do with the servers of
// Source (a file, or "-" for In): print their entries to Out, or with
// Write append them to File, or write one file per server into Dir.
type Options struct {
	Source string
	In     io.Reader
	Write  bool
	File   string
	Dir    string
}

// Run imports o.Source as `dsh-host import` does: notes on the servers it
// converted go to notes, the entries or what was written to out.
func Run(o Options, out, notes io.Writer) error {
	var data []byte
	var err error
	if o.Source == "-" {
		var b bytes.Buffer
		_, err = b.ReadFrom(o.In)
		data = b.Bytes()
	} else {
		data, err = os.ReadFile(o.Source)
	}
	if err != nil {
		return err
	}
	im, err := Parse(data, filepath.Base(o.Source))
	if err != nil {
		return fmt.Errorf("%s: %w", o.Source, err)
	}
	for _, n := range im.Notes {
		fmt.Fprintf(notes, "note: %s\n", n)
	}
	if im.Len() == 0 {
		return fmt.Errorf("%s: no server could be imported", o.Source)
	}
	switch {
	case !o.Write:
		text, err := im.YAML()
		if err != nil {
			return err
		}
		_, err = out.Write(text)
		return err
	case o.Dir != "":
		files, err := im.WriteDir(o.Dir, o.File)
		if err != nil {
			return err
		}
		pattern := filepath.Join(o.Dir, "*.yml")
		if rel, err := filepath.Rel(filepath.Dir(o.File), pattern); err == nil {
			pattern = rel // include paths are the composition's
		}
		fmt.Fprintf(out, "wrote %s; list %s under include: in %s if it is not there yet, then check it with: dsh-host check -c %s\n",
			strings.Join(files, ", "), pattern, o.File, o.File)
	default:
		if err := im.Append(o.File); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: appended %d entries (%s); check it with: dsh-host check -c %s\n", o.File, im.Len(), im.IDs(), o.File)
	}
	return nil
}
