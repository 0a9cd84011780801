package attachments_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"log"
	"os"

	"github.com/dsh-host/dsh-host/services/attachments"
)

func Example() {
	dir, err := os.MkdirTemp("", "attachments")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := attachments.New(dir, nil)
	if err != nil {
		log.Fatal(err)
	}

	var img bytes.Buffer
	png.Encode(&img, image.NewGray(image.Rect(0, 0, 4, 3)))
	// Tool results carry images in base64: decode it strictly.
	payload := base64.StdEncoding.EncodeToString(img.Bytes())
	data, err := attachments.DecodeBase64Strict(payload)
	if err != nil {
		log.Fatal(err)
	}
	refs, err := st.SaveImages(context.Background(), []attachments.Image{
		{MediaType: "image/png", Data: data, Name: "shot.png"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(refs[0].MediaType, refs[0].Width, refs[0].Height, refs[0].Name)

	// A batch with a member that is not what it claims is refused whole.
	_, err = st.SaveImages(context.Background(), []attachments.Image{
		{MediaType: "image/png", Data: img.Bytes()},
		{MediaType: "image/jpeg", Data: img.Bytes()},
	})
	fmt.Println(attachments.IsAdmissionError(err), err)
	// Output:
	// image/png 4 3 shot.png
	// true image 1: the bytes are not image/jpeg as declared: they are image/png
}
