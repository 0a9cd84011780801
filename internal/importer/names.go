package importer

// Names lists the imported servers under the names the client's file
// gives them (an entry's id may differ: Brave Search → Brave_Search), so
// that a caller moving them can remove exactly those from the client.
func (im *Import) Names() []string { return append([]string(nil), im.names...) }

// Appended returns orig, the composition at path, with the servers
// appended to its plugins list (the first under the comment head) as
// Append would write them, every other byte kept, without writing
// anything. An id or serverName the composition already uses is an error.
func (im *Import) Appended(path string, orig []byte, head string) ([]byte, error) {
	if len(orig) == 0 {
		return render(im.servers, nil, head)
	}
	return appended(path, orig, im.servers, head)
}
