package importer

// Names lists the imported servers under the names the client's file
// gives them (an entry's id may differ: Brave Search → Brave_Search), so
// that a caller moving them can remove exactly those from the client.
func (im *Import) Names() []string { return append([]string(nil), im.names...) }

// Appended returns orig, the composition at path (which need not exist on
// disk), with the servers appended to its plugins list, every other byte
// kept, without writing it. An id or serverName the composition already
// uses is an error.
func (im *Import) Appended(path string, orig []byte) ([]byte, error) {
	if len(orig) == 0 {
		return render(im.servers, nil, im.Source)
	}
	return appended(path, orig, im.servers, importHead(im.Source))
}
