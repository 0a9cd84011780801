package importer

import (
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

// maxSource bounds what Run reads: a client's config is kilobytes, and a
// path or a pipe named by mistake (a device, a log) must not be read whole.
const maxSource = 16 << 20

// readSource reads o.Source ("-": o.In), refusing one past maxSource.
func readSource(o Options) ([]byte, error) {
	in := o.In
	if o.Source != "-" {
		f, err := os.Open(o.Source)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxSource+1))
	if err == nil && len(data) > maxSource {
		name := o.Source
		if name == "-" {
			name = "the standard input"
		}
		err = fmt.Errorf("%s is larger than %d MiB: name a client's config file", name, maxSource>>20)
	}
	return data, err
}

// Run imports o.Source as `dsh-host import` does: notes on the servers it
// converted go to notes, the entries or what was written to out.
func Run(o Options, out, notes io.Writer) error {
	data, err := readSource(o)
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
