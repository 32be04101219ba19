// terraform-provider-berthtest is a test provider, not a product: the hashicorp providers are
// not served by the Go module proxy this project may use, so the tests get a small real
// provider of their own. Its one resource, berthtest_file, keeps a file on the local disk, which
// makes drift observable (change the file, refresh) and failures injectable (an unwritable path).
//
// Built with -ldflags "-X main.heavyTypes=N" it is berthheavy instead: the same file resource
// beside N generated resource types of heavyAttributes attributes each, a schema the size of a
// large cloud provider's, so that every load of its schema costs what it costs in real life.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// heavyTypes: how many generated resource types berthheavy has; "0" is berthtest.
var heavyTypes = "0"

const heavyAttributes = 16

func heavyCount() int {
	n, err := strconv.Atoi(heavyTypes)
	if err != nil {
		log.Fatalf("heavyTypes %q is not a number", heavyTypes)
	}
	return n
}

func providerName() string {
	if heavyCount() > 0 {
		return "berthheavy"
	}
	return "berthtest"
}

type berthtestProvider struct{}

func (p *berthtestProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = providerName()
}

func (p *berthtestProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerschema.Schema{}
}

func (p *berthtestProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (p *berthtestProvider) Resources(context.Context) []func() resource.Resource {
	resources := []func() resource.Resource{func() resource.Resource { return &fileResource{} }}
	for i := 0; i < heavyCount(); i++ {
		name := fmt.Sprintf("type_%04d", i)
		resources = append(resources, func() resource.Resource { return &heavyResource{name: name} })
	}
	return resources
}

// heavyResource is one generated type: its schema is its whole purpose (modules never use it).
type heavyResource struct{ name string }

func (r *heavyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.name
}

func (r *heavyResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attributes := map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, Description: "the object's id"},
	}
	for i := 0; i < heavyAttributes; i++ {
		description := fmt.Sprintf("setting %d of %s, as a cloud API documents each of its fields", i, r.name)
		switch i % 4 {
		case 0:
			attributes[fmt.Sprintf("name_%d", i)] = schema.StringAttribute{Optional: true, Description: description}
		case 1:
			attributes[fmt.Sprintf("size_%d", i)] = schema.Int64Attribute{Optional: true, Description: description}
		case 2:
			attributes[fmt.Sprintf("enabled_%d", i)] = schema.BoolAttribute{Optional: true, Description: description}
		default:
			attributes[fmt.Sprintf("tags_%d", i)] = schema.MapAttribute{ElementType: types.StringType, Optional: true, Description: description}
		}
	}
	resp.Schema = schema.Schema{Attributes: attributes, Description: "a generated resource type of berthheavy"}
}

func (r *heavyResource) Create(_ context.Context, _ resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.AddError("not creatable", "berthheavy's generated types exist for their schema only")
}

func (r *heavyResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *heavyResource) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {}

func (r *heavyResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}

func (p *berthtestProvider) DataSources(context.Context) []func() datasource.DataSource {
	return nil
}

type fileModel struct {
	ID      types.String `tfsdk:"id"`
	Path    types.String `tfsdk:"path"`
	Content types.String `tfsdk:"content"`
}

type fileResource struct{}

func (r *fileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_file"
}

func (r *fileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"path": schema.StringAttribute{
				Required:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"content": schema.StringAttribute{Required: true},
		},
	}
}

func digest(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

func write(m *fileModel) error {
	p := m.Path.ValueString()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(m.Content.ValueString()), 0o644)
}

func (r *fileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := write(&m); err != nil {
		resp.Diagnostics.AddError("cannot write file", err.Error())
		return
	}
	m.ID = types.StringValue(digest(m.Path.ValueString()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *fileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data, err := os.ReadFile(m.Path.ValueString())
	if errors.Is(err, os.ErrNotExist) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("cannot read file", err.Error())
		return
	}
	m.Content = types.StringValue(string(data))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *fileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := write(&m); err != nil {
		resp.Diagnostics.AddError("cannot write file", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *fileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := os.Remove(m.Path.ValueString()); err != nil && !errors.Is(err, os.ErrNotExist) {
		resp.Diagnostics.AddError("cannot delete file", err.Error())
	}
}

func (r *fileResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("path"), req.ID)...)
}

func main() {
	err := providerserver.Serve(context.Background(), func() provider.Provider { return &berthtestProvider{} },
		providerserver.ServeOpts{Address: "registry.opentofu.org/berth/" + providerName()})
	if err != nil {
		log.Fatal(err)
	}
}
